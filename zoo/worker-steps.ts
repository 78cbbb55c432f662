// The steps of one zoo model, each through the qtk command line (its main(), in this process): import against
// onnxruntime, quantize plain or --hybrid on a march, SQNR against float, export + compare. zoo/model-worker.ts
// runs them in order.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseNpy } from '@qtk/nn';
import { bufferIo } from '../apps/cli/src/io.js';
import { main } from '../apps/cli/src/main.js';
import type { ZooEntry } from './entries.js';
import { type EvalJson, type MarchResult, type ModelResult, reasonOf, warningsOf } from './result.js';

/**
 * QTK's float output may differ from onnxruntime's by float rounding only: 1e-3 of the output's range, or 1e-6
 * absolute for an output near zero everywhere (onnxruntime's vectorised sigmoid is 1e-7 off where it is ~1e-7).
 */
const IMPORT_TOLERANCE = 1e-3;
const IMPORT_ABSOLUTE_TOLERANCE = 1e-6;

async function qtk(...argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const io = bufferIo();
  const code = await main(argv, io);
  return { code, stdout: io.stdout, stderr: io.stderr };
}

function shapeArgs(e: ZooEntry, batch = e.batch): string[] {
  return [...(e.inputShape ? ['--input-shape', e.inputShape] : []), '--batch', String(batch)];
}

/** shapeArgs, and the import budget, for the commands that import the ONNX file (eval, run, quantize). */
function importArgs(e: ZooEntry, batch = e.batch): string[] {
  return [...shapeArgs(e, batch), ...(e.maxElements ? ['--max-elements', String(e.maxElements)] : [])];
}

/**
 * qtk eval MODEL --reference FLOAT --json: the figures per output, or the error. Where onnxruntime-node has no
 * kernel for the float model (the ONNX test data's old opsets), QTK's import of it is the reference: the import
 * step checked it against the test data's expected output.
 */
async function evalAgainst(e: ZooEntry, model: string): Promise<EvalJson | { error: string }> {
  const args = ['eval', model, '--data', e.data, '--reference', e.onnx!, '--json', ...importArgs(e)];
  let r = await qtk(...args);
  if (r.code !== 0 && e.expected && /onnxruntime-node cannot load/.test(r.stderr))
    r = await qtk(...args, '--reference-runtime', 'qtk');
  if (r.code !== 0 && !r.stdout.startsWith('{')) return { error: reasonOf(r.stderr) };
  return JSON.parse(r.stdout) as EvalJson;
}

function minSqnr(j: EvalJson): number | null {
  const v = j.outputs.map((o) => (o.identical ? Infinity : (o.sqnrDb ?? Number.NaN)));
  const m = Math.min(...v);
  return Number.isFinite(m) ? m : m === Infinity ? null : Number.NaN;
}

/**
 * The ONNX test data's case: QTK's float output on the case's input (qtk run --engine qtk) against the outputs
 * the test data expects, max |QTK − expected| / max |expected|.
 */
async function importAgainstExpected(
  e: ZooEntry,
  file: string,
  expected: NonNullable<ZooEntry['expected']>,
  work: string,
): Promise<{ rel: number; maxAbs: number } | { error: string }> {
  const out = join(work, 'expected-run');
  const r = await qtk(
    'run',
    file,
    '--data',
    expected.data,
    '--out',
    out,
    '--force',
    '--engine',
    'qtk',
    ...shapeArgs(e),
  );
  if (r.code !== 0) return { error: reasonOf(r.stderr) };
  let rel = 0;
  let maxAbs = 0;
  for (const [k, path] of expected.outputs.entries()) {
    const want = parseNpy(readFileSync(path)).data as Float32Array;
    const got = outputValues(out, r.stdout, k);
    if (got.length !== want.length)
      return { error: `output ${k}: ${got.length} values, the test data expects ${want.length}` };
    let diff = 0;
    let ref = 0;
    for (let i = 0; i < want.length; i++) {
      const [a, b] = [got[i]!, want[i]!];
      if (Number.isNaN(a) && Number.isNaN(b)) continue; // sqrt / pow of the case's negative inputs: NaN both sides
      diff = Math.max(diff, Number.isNaN(a) || Number.isNaN(b) ? Infinity : Math.abs(a - b));
      if (Number.isFinite(b)) ref = Math.max(ref, Math.abs(b));
    }
    maxAbs = Math.max(maxAbs, diff);
    rel = Math.max(rel, ref > 0 ? diff / ref : diff);
  }
  return { rel, maxAbs };
}

/**
 * Output k of every sample qtk run wrote to OUT, in sample order ('x', or a batch file's 'x-0', 'x-1', ...), as
 * one array; the output's file part is read from qtk run's summary ("'name' [dims] -> <sample>.FILE.npy").
 */
function outputValues(out: string, stdout: string, k: number): Float32Array {
  const parts = [...stdout.matchAll(/-> <sample>\.(.+)\.npy/g)].map((m) => m[1]!);
  const part = parts[k];
  if (part === undefined) return new Float32Array(0);
  const index = (f: string) => Number(/-(\d+)\./.exec(f)?.[1] ?? 0);
  const files = readdirSync(out)
    .filter((f) => f.endsWith(`.${part}.npy`) && f.split('.').length === part.split('.').length + 2)
    .sort((a, b) => index(a) - index(b));
  const arrays = files.map((f) => parseNpy(readFileSync(join(out, f))).data as Float32Array);
  const all = new Float32Array(arrays.reduce((n, a) => n + a.length, 0));
  let at = 0;
  for (const a of arrays) {
    all.set(a, at);
    at += a.length;
  }
  return all;
}

export async function importStep(e: ZooEntry, result: ModelResult, save: () => void, work: string): Promise<void> {
  if (e.expected && e.onnx) {
    const t = performance.now();
    const c = await importAgainstExpected(e, e.onnx, e.expected, work);
    const seconds = (performance.now() - t) / 1000;
    const opset = e.opsets[0]?.opset ?? null;
    if ('error' in c) result.imports.push({ opset, ok: false, against: 'test data', reason: c.error, seconds });
    else {
      const ok = c.rel <= IMPORT_TOLERANCE || c.maxAbs <= IMPORT_ABSOLUTE_TOLERANCE;
      result.imports.push({
        opset,
        ok,
        against: 'test data',
        maxRelError: c.rel,
        seconds,
        ...(ok
          ? {}
          : {
              reason: `QTK's float output differs from the test data's expected output by ${c.rel.toPrecision(3)} of its range`,
            }),
      });
    }
    save();
    return;
  }
  for (const o of e.opsets) {
    if (!o.file) {
      result.imports.push({ opset: o.opset, ok: false, reason: `torch.onnx.export failed: ${o.error}` });
      continue;
    }
    const t = performance.now();
    const r = await qtk(
      'eval',
      o.file,
      '--data',
      e.data,
      '--reference',
      o.file,
      '--engine',
      'qtk',
      '--json',
      ...importArgs(e),
    );
    const seconds = (performance.now() - t) / 1000;
    if (!r.stdout.startsWith('{')) {
      result.imports.push({ opset: o.opset, ok: false, reason: reasonOf(r.stderr), seconds });
    } else {
      const j = JSON.parse(r.stdout) as EvalJson;
      const rel = Math.max(...j.outputs.map((x) => (x.referenceMaxAbs > 0 ? x.maxAbsError / x.referenceMaxAbs : 0)));
      const maxAbs = Math.max(...j.outputs.map((x) => x.maxAbsError));
      const ok = r.code === 0 && (rel <= IMPORT_TOLERANCE || maxAbs <= IMPORT_ABSOLUTE_TOLERANCE);
      result.imports.push({
        opset: o.opset,
        ok,
        maxRelError: rel,
        seconds,
        ...(ok
          ? {}
          : {
              reason:
                r.code !== 0
                  ? reasonOf(r.stderr)
                  : `QTK's float output differs from onnxruntime's by ${rel.toPrecision(3)} of its range`,
            }),
      });
    }
    save();
  }
}

export async function marchStep(
  e: ZooEntry,
  march: string,
  mode: 'plain' | 'hybrid',
  work: string,
): Promise<MarchResult> {
  const out = join(work, `${march}-${mode}.qtk`);
  const t = performance.now();
  const quantize = (batch: number) =>
    qtk(
      'quantize',
      e.onnx!,
      '--calib',
      e.data,
      '--march',
      march,
      '--out',
      out,
      // The input stub's scale is calibrated, as FX's input observer is: the default 1/128 suits inputs in [-1, 1],
      // and the zoo's images, normalised with ImageNet's mean and std, reach -2.1 .. 2.6 (resnet18 at 1/128 clamps
      // 55 % of its input values and measured 3.0 dB instead of 31.6).
      '--input-scale',
      'auto',
      ...(mode === 'hybrid' ? ['--hybrid'] : []),
      ...importArgs(e, batch),
    );
  const calibBatch = e.calibBatch ?? e.batch;
  let q = await quantize(calibBatch);
  let retried: string | null = null;
  // a model whose shapes are fixed for its declared batch (a Reshape to [1, ...]) calibrates at that batch
  if (q.code !== 0 && calibBatch !== e.batch && q.stderr.includes(`--batch ${e.batch}`)) {
    retried = `calibrated at its declared batch ${e.batch}: at ${calibBatch}, ${reasonOf(q.stderr)}`;
    q = await quantize(e.batch);
  }
  const r: MarchResult = { march, mode, converted: q.code === 0, seconds: (performance.now() - t) / 1000 };
  if (q.code !== 0) return { ...r, reason: reasonOf(q.stderr) };
  r.warnings = [...(retried ? [retried] : []), ...warningsOf(q.stdout)];
  const devices = /devices:\s+(\d+) BPU, (\d+) CPU/.exec(q.stdout);
  r.bpuShare = devices ? Number(devices[1]) / (Number(devices[1]) + Number(devices[2])) : 1;
  const ev = await evalAgainst(e, out);
  if ('error' in ev) r.reason = `qtk eval --reference: ${ev.error}`;
  else r.sqnrDb = minSqnr(ev);
  const onnx = join(work, `${march}-${mode}.onnx`);
  const x = await qtk('export', out, '--out', onnx);
  if (x.code !== 0) {
    r.bitExact = false;
    r.exportReason = `qtk export: ${reasonOf(x.stderr)}`;
    return r;
  }
  const c = await qtk('compare', out, onnx, '--data', e.data, ...shapeArgs(e));
  r.bitExact = c.code === 0;
  if (!r.bitExact) r.exportReason = `qtk compare: ${reasonOf(c.stderr || firstDifference(c.stdout))}`;
  return r;
}

/** Why qtk compare failed: the first differing node, else the end-to-end rounding line, else the outputs line. */
function firstDifference(stdout: string): string {
  const lines = stdout.split('\n');
  return (
    lines.find((l) => l.startsWith('values:') && l.includes('first difference')) ??
    lines.find((l) => l.startsWith('rounding:')) ??
    lines.find((l) => l.startsWith('outputs:')) ??
    lines[0] ??
    ''
  );
}
