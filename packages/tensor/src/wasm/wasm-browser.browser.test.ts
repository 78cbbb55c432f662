// The wasm backend in a real browser (Debian's Chromium through playwright-core): the binaries are
// fetched by URL, compiled asynchronously, and in a Web Worker of a cross-origin isolated page the
// shared-memory build runs on two threads (a nested Web Worker). Results are compared with the cpu
// kernels of the same page. Skipped, saying why, when Chromium is not installed (pnpm test installs it).
import { existsSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { type Browser, chromium } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeNeeding } from '../../../../scripts/needs-system.js';
import { CHROMIUM } from '../../../../scripts/system-requirements.js';

const WASM_DIR = fileURLToPath(new URL('../../wasm/', import.meta.url));
const SRC_DIR = fileURLToPath(new URL('..', import.meta.url));

// Runs where it is loaded (window or worker): ops before initWasmBackend() run on the cpu backend,
// the same ops after it on wasm.
const PROBE = `
import { conv2d, Generator, initWasmBackend, matmul, randn, wasmStatus } from './index.ts';
const maxDiff = (a, b) => { let d = 0; for (let i = 0; i < a.length; i++) d = Math.max(d, Math.abs(a[i] - b[i])); return d; };
export async function probe() {
  const g = new Generator(7);
  const a = randn([192, 256], { generator: g });
  const b = randn([256, 320], { generator: g });
  const x = randn([8, 16, 20, 20], { generator: g });
  const w = randn([32, 16, 3, 3], { generator: g });
  const before = wasmStatus();
  const cpuMm = matmul(a, b).values();
  const cpuConv = conv2d(x, w, null, { padding: 1 }).values();
  const t0 = performance.now();
  const status = await initWasmBackend({ urls: {
    gemm: '/wasm/gemm.wasm', 'gemm-relaxed': '/wasm/gemm-relaxed.wasm',
    'gemm-shared': '/wasm/gemm-shared.wasm', 'gemm-shared-relaxed': '/wasm/gemm-shared-relaxed.wasm',
  } });
  const initMs = performance.now() - t0;
  const mm = matmul(a, b).values();
  const conv = conv2d(x, w, null, { padding: 1 }).values();
  return { before, status, initMs, after: wasmStatus(), mmDiff: maxDiff(mm, cpuMm), convDiff: maxDiff(conv, cpuConv) };
}
`;

const PAGE = (where: 'window' | 'worker') => `<!doctype html><meta charset="utf-8"><title>qtk wasm</title>
<script type="module">
${
  where === 'window'
    ? "import { probe } from '/probe.js'; window.result = probe().catch((e) => ({ error: String(e && e.stack || e) }));"
    : `const worker = new Worker('/worker.js', { type: 'module' });
window.result = new Promise((resolve) => {
  worker.onmessage = (e) => resolve(e.data);
  worker.onerror = (e) => resolve({ error: e.message });
});`
}
</script>`;
const WORKER =
  "import { probe } from '/probe.js'; probe().then((r) => postMessage(r), (e) => postMessage({ error: String(e && e.stack || e) }));";

interface ProbeResult {
  error?: string;
  before: { loaded: boolean; reason?: string };
  status: { loaded: boolean; source?: string; relaxedSimd?: boolean; threads?: number; threadsReason?: string };
  after: { threads?: number; workerChunks?: number };
  initMs: number;
  mmDiff: number;
  convDiff: number;
}

describeNeeding('chromium', 'wasm backend in headless Chromium', () => {
  let server: Server;
  let origin: string;
  let browser: Browser;

  beforeAll(async () => {
    const bundle = await build({
      stdin: { contents: PROBE, resolveDir: SRC_DIR, sourcefile: 'probe.ts', loader: 'ts' },
      bundle: true,
      write: false,
      format: 'esm',
      platform: 'browser',
      conditions: ['qtk-source'],
      logLevel: 'silent',
    });
    const probeJs = bundle.outputFiles[0]!.text;
    server = createServer((req, res) => {
      const [path, query] = (req.url ?? '/').split('?');
      // ?isolated=0 serves the page without the headers that make it cross-origin isolated
      if (query !== 'isolated=0') {
        res.setHeader('Cross-Origin-Opener-Policy', 'same-origin');
        res.setHeader('Cross-Origin-Embedder-Policy', 'require-corp');
      }
      const send = (type: string, body: string | Buffer) => {
        res.setHeader('Content-Type', type);
        res.end(body);
      };
      if (path === '/window.html') return send('text/html', PAGE('window'));
      if (path === '/worker.html') return send('text/html', PAGE('worker'));
      if (path === '/worker.js') return send('text/javascript', WORKER);
      if (path === '/probe.js') return send('text/javascript', probeJs);
      const wasm = /^\/wasm\/([a-z-]+\.wasm)$/.exec(path ?? '');
      if (wasm && existsSync(WASM_DIR + wasm[1])) return send('application/wasm', readFileSync(WASM_DIR + wasm[1]));
      res.statusCode = 404;
      res.end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: process.getuid?.() === 0 ? ['--no-sandbox'] : [],
    });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await new Promise((resolve) => server?.close(resolve));
  });

  async function run(page: string): Promise<ProbeResult> {
    const tab = await browser.newPage();
    const errors: string[] = [];
    tab.on('pageerror', (e) => errors.push(e.message));
    await tab.goto(`${origin}/${page}`);
    const result = (await tab.evaluate('window.result')) as ProbeResult;
    await tab.close();
    expect(errors).toEqual([]);
    expect(result.error).toBeUndefined();
    return result;
  }

  it('in a Web Worker of an isolated page: fetched relaxed shared build, two threads, same results as cpu', async () => {
    const r = await run('worker.html');
    expect(r.before.loaded).toBe(false);
    expect(r.before.reason).toMatch(/initWasmBackend/);
    expect(r.status).toMatchObject({
      loaded: true,
      source: '/wasm/gemm-shared-relaxed.wasm',
      relaxedSimd: true,
      threads: 2,
    });
    expect(r.after.workerChunks).toBeGreaterThan(0);
    // within float32 accumulation error of the cpu sums (the cpu GEMM's float64 product rounded once per
    // sum is what a fused multiply-add computes, so here the two agree exactly; conv sums in another order)
    expect(r.mmDiff).toBeLessThan(1e-3);
    expect(r.convDiff).toBeLessThan(1e-3);
  });

  it("on a window's main thread: one thread, and the reason says to use a worker", async () => {
    const r = await run('window.html');
    expect(r.status).toMatchObject({ loaded: true, source: '/wasm/gemm-relaxed.wasm', threads: 1 });
    expect(r.status.threadsReason).toMatch(/main thread cannot wait/);
    expect(r.mmDiff).toBeLessThan(1e-3);
  });

  it('in a worker of a page that is not cross-origin isolated: one thread, and the reason names the headers', async () => {
    const r = await run('worker.html?isolated=0');
    expect(r.status).toMatchObject({ loaded: true, source: '/wasm/gemm-relaxed.wasm', threads: 1 });
    expect(r.status.threadsReason).toMatch(/Cross-Origin-Embedder-Policy/);
    expect(r.convDiff).toBeLessThan(1e-3);
  });
});
