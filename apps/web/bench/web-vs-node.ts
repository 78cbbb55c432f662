// The web app's demo job timed in Chromium (the built app, served cross-origin isolated by Vite's preview
// server, driven by playwright-core) and in Node (the same job code, in a child process), alternately, so
// both see the machine in the same state. Prints the calibrate + convert time and the whole job's time
// (import, float and fixed-point evaluation of 2,000 images, profile, export) of every round.
// Run: pnpm --filter @qtk/web bench [--rounds=3]
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { build, preview } from 'vite';

const WEB = fileURLToPath(new URL('..', import.meta.url));
const NODE_JOB = fileURLToPath(new URL('./job-node.ts', import.meta.url));
const rounds = Number(process.argv.find((a) => a.startsWith('--rounds='))?.slice(9) ?? 3);

interface Times {
  quantize: number;
  total: number;
}

function nodeRound(): Times {
  const r = spawnSync(process.execPath, ['--conditions=qtk-source', '--import', 'tsx', NODE_JOB], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`the Node job failed:\n${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').pop()!) as Times;
}

process.env.NODE_ENV = 'production';
await build({ root: WEB, mode: 'production', logLevel: 'warn' });
const server = await preview({ root: WEB, preview: { port: 0, host: '127.0.0.1' }, logLevel: 'warn' });
const browser = await chromium.launch({
  executablePath: process.env.QTK_CHROMIUM ?? '/usr/bin/chromium',
  args: process.getuid?.() === 0 ? ['--no-sandbox'] : [],
});

async function browserRound(): Promise<Times> {
  const page = await browser.newPage();
  await page.goto(server.resolvedUrls!.local[0]!);
  await page.waitForSelector('html[data-ready="true"]');
  await page.getByTestId('run').click();
  await page.getByTestId('result').waitFor({ timeout: 300_000 });
  const text = (await page.getByTestId('quantize-seconds').textContent()) ?? '';
  const m = /([\d.]+) s \(whole job ([\d.]+) s\)/.exec(text);
  await page.close();
  if (!m) throw new Error(`unexpected timing text: ${text}`);
  return { quantize: Number(m[1]), total: Number(m[2]) };
}

console.log('round  Chromium calib+convert / job   Node calib+convert / job');
for (let i = 0; i < rounds; i++) {
  const b = await browserRound();
  const n = nodeRound();
  console.log(
    `${String(i + 1).padStart(5)}  ${b.quantize.toFixed(2).padStart(8)} s / ${b.total.toFixed(2).padStart(6)} s   ${n.quantize.toFixed(2).padStart(8)} s / ${n.total.toFixed(2).padStart(6)} s`,
  );
}
await browser.close();
await server.close();
