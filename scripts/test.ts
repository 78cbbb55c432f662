// `pnpm test`: every check and test, from a fresh clone on a machine with only Node and npm.
//
// 1. Set-up: the Debian packages the tests check QTK against (scripts/system-requirements.ts) are installed when
//    missing and this user can (root, or sudo without a password, with apt-get). Where it cannot, the tests that
//    need them skip with a note, and the run ends with the list and the command that installs them.
// 2. Two lanes at once, since most of the checks besides the unit tests are single-threaded: lane 1 runs vitest
//    (with at least two workers: its default on two cores is one); lane 2 runs the linter, the type checks (two
//    programs, at once; the first also emits the packages' declarations, tsconfig.check.json, so check:packages
//    does not type-check the same sources a second time), check:packages with check:install on the same build,
//    then the web app in Chromium (test:e2e). On two cores this took pnpm test from 462 s (one worker) to 348 s.
// 3. A summary: each step's time and result, every skipped test or check with its reason, what to install.
// Exits 1 when any step fails. QTK_NO_SYSTEM_INSTALL=1 skips the installs (the tests then skip with notes).
// Usage: node --import tsx scripts/test.ts
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import type { SkipLine } from './skip-reporter.js';
import { installCommand, SYSTEM_REQUIREMENTS, type SystemRequirement } from './system-requirements.js';
import { ROOT } from './workspace.js';

const LOGS = join(ROOT, 'runs', 'test');
const BIN = join(ROOT, 'node_modules', '.bin');
const TSX = ['--import', 'tsx'];

interface StepResult {
  readonly name: string;
  readonly ok: boolean;
  readonly seconds: number;
}

const seconds = (since: number) => (performance.now() - since) / 1000;

/** The command that runs apt-get as root for this user, or null when it cannot. */
function aptCommand(): string[] | null {
  if (process.env.QTK_NO_SYSTEM_INSTALL === '1') return null;
  if (spawnSync('sh', ['-c', 'command -v apt-get'], { stdio: 'ignore' }).status !== 0) return null;
  const apt = ['env', 'DEBIAN_FRONTEND=noninteractive', 'apt-get'];
  if (process.getuid?.() === 0) return apt;
  return spawnSync('sudo', ['-n', 'true'], { stdio: 'ignore' }).status === 0 ? ['sudo', '-n', ...apt] : null;
}

/** Installs the missing system requirements when possible; returns the ones still missing. */
function setUp(): SystemRequirement[] {
  const missing = SYSTEM_REQUIREMENTS.filter((r) => !r.isPresent());
  if (!missing.length) return [];
  const packages = missing.map((r) => r.debianPackage);
  const aptGet = aptCommand();
  if (!aptGet) {
    console.log(`set-up: cannot install ${packages.join(', ')} here (needs root or sudo, and apt-get)`);
    return missing;
  }
  console.log(`set-up: installing ${packages.join(', ')} with apt-get`);
  const [cmd, ...pre] = aptGet;
  const apt = (args: string[]) => spawnSync(cmd!, [...pre, ...args], { stdio: 'inherit' }).status === 0;
  if (!apt(['update', '-qq']) || !apt(['install', '-y', '-qq', ...packages]))
    console.log('set-up: apt-get failed; the tests that need these packages will skip');
  return missing.filter((r) => !r.isPresent());
}

/**
 * Runs a command; its output streams to the terminal when `live`, else goes to runs/test/NAME.log and is
 * printed once the step ends (all of it on failure, the last lines on success).
 */
function step(name: string, cmd: string, args: readonly string[], live: boolean, env = {}): Promise<StepResult> {
  const started = performance.now();
  const log = join(LOGS, `${name.replace(/[^a-z0-9]+/gi, '-')}.log`);
  return new Promise((done) => {
    const child = spawn(cmd, args, {
      cwd: ROOT,
      env: { ...process.env, ...env, ...(live ? {} : { FORCE_COLOR: '0' }) },
      stdio: live ? 'inherit' : ['ignore', 'pipe', 'pipe'],
    });
    const chunks: Buffer[] = [];
    child.stdout?.on('data', (d: Buffer) => chunks.push(d));
    child.stderr?.on('data', (d: Buffer) => chunks.push(d));
    child.on('close', (code) => {
      const ok = code === 0;
      const result = { name, ok, seconds: seconds(started) };
      if (!live) {
        const text = Buffer.concat(chunks).toString('utf8');
        writeFileSync(log, text);
        const shown = ok ? text.trimEnd().split('\n').slice(-3).join('\n') : text.trimEnd();
        console.log(`\n── ${name}: ${ok ? 'passed' : 'FAILED'} in ${result.seconds.toFixed(1)} s ──\n${shown}`);
      }
      done(result);
    });
  });
}

function readSkips(file: string): SkipLine[] {
  return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as SkipLine[]) : [];
}

async function main(): Promise<void> {
  const started = performance.now();
  rmSync(LOGS, { recursive: true, force: true });
  mkdirSync(LOGS, { recursive: true });
  const missing = setUp();
  const setUpSeconds = seconds(started);
  const unitSkips = join(LOGS, 'skipped-unit.json');
  const e2eSkips = join(LOGS, 'skipped-e2e.json');

  const workers = `--maxWorkers=${Math.max(2, availableParallelism() - 1)}`;
  const unit = step('vitest', join(BIN, 'vitest'), ['run', workers], true, { QTK_SKIP_LIST: unitSkips });
  const rest = (async () => {
    const results = [await step('lint', join(BIN, 'biome'), ['check', '--error-on-warnings', '.'], false)];
    results.push(
      ...(await Promise.all([
        step('typecheck', join(BIN, 'tsc'), ['-p', 'tsconfig.check.json'], false),
        step('typecheck web', join(BIN, 'tsc'), ['--noEmit', '-p', 'apps/web'], false),
      ])),
    );
    results.push(
      await step(
        'check:packages + check:install',
        'node',
        [...TSX, 'scripts/check-packages.ts', '--install', '--declarations-emitted'],
        false,
      ),
    );
    results.push(
      await step('test:e2e', join(BIN, 'vitest'), ['run', '--config', 'apps/web/vitest.e2e.config.ts'], false, {
        QTK_SKIP_LIST: e2eSkips,
      }),
    );
    return results;
  })();
  const results = [await unit, ...(await rest)];

  const skips = [...readSkips(unitSkips), ...readSkips(e2eSkips)];
  const lines = [
    '',
    '══ pnpm test ══',
    `set-up ${setUpSeconds.toFixed(1)} s`,
    ...results.map((r) => `${r.ok ? 'passed' : 'FAILED'}  ${r.name} (${r.seconds.toFixed(1)} s)`),
    `total ${seconds(started).toFixed(1)} s; logs in ${LOGS}`,
  ];
  if (skips.length) {
    lines.push('', `${skips.length} skipped test(s) or check(s):`, ...skips.map((s) => `  - ${s.test}: ${s.note}`));
  }
  if (missing.length) {
    lines.push('', 'not on this machine, so the tests above that need them were skipped:');
    for (const r of missing) lines.push(`  - ${r.debianPackage}: ${r.what}, for ${r.neededBy}`);
    lines.push(`install them with: ${installCommand(missing.map((r) => r.debianPackage))}`);
  }
  console.log(lines.join('\n'));
  if (results.some((r) => !r.ok)) process.exitCode = 1;
}

await main();
