// The steps of one zoo model, each through the qtk command line (its main(), in this process): import against
// onnxruntime, quantize plain or --hybrid on a march, SQNR against float, export + compare. zoo/model-worker.ts
// runs them in order.
import { join } from 'node:path';
import { bufferIo } from '../apps/cli/src/io.js';
import { main } from '../apps/cli/src/main.js';
import type { ZooEntry } from './entries.js';
import { type EvalJson, type MarchResult, type ModelResult, reasonOf, warningsOf } from './result.js';

/** QTK's float output may differ from onnxruntime's by float rounding only: 1e-3 of the output's range. */
const IMPORT_TOLERANCE = 1e-3;

async function qtk(...argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const io = bufferIo();
  const code = await main(argv, io);
  return { code, stdout: io.stdout, stderr: io.stderr };
}

function shapeArgs(e: ZooEntry): string[] {
  return [...(e.inputShape ? ['--input-shape', e.inputShape] : []), '--batch', String(e.batch)];
}

/** qtk eval MODEL --reference FLOAT --json: the figures per output, or the error. */
async function evalAgainst(e: ZooEntry, model: string, extra: string[] = []): Promise<EvalJson | { error: string }> {
  const r = await qtk('eval', model, '--data', e.data, '--reference', e.onnx!, '--json', ...shapeArgs(e), ...extra);
  if (r.code !== 0 && !r.stdout.startsWith('{')) return { error: reasonOf(r.stderr) };
  return JSON.parse(r.stdout) as EvalJson;
}

function minSqnr(j: EvalJson): number | null {
  const v = j.outputs.map((o) => (o.identical ? Infinity : (o.sqnrDb ?? Number.NaN)));
  const m = Math.min(...v);
  return Number.isFinite(m) ? m : m === Infinity ? null : Number.NaN;
}

export async function importStep(e: ZooEntry, result: ModelResult, save: () => void): Promise<void> {
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
      '--runtime',
      'qtk',
      '--json',
      ...shapeArgs(e),
    );
    const seconds = (performance.now() - t) / 1000;
    if (!r.stdout.startsWith('{')) {
      result.imports.push({ opset: o.opset, ok: false, reason: reasonOf(r.stderr), seconds });
    } else {
      const j = JSON.parse(r.stdout) as EvalJson;
      const rel = Math.max(...j.outputs.map((x) => (x.referenceMaxAbs > 0 ? x.maxAbsError / x.referenceMaxAbs : 0)));
      const ok = r.code === 0 && rel <= IMPORT_TOLERANCE;
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
  const q = await qtk(
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
    ...shapeArgs(e),
  );
  const r: MarchResult = { march, mode, converted: q.code === 0, seconds: (performance.now() - t) / 1000 };
  if (q.code !== 0) return { ...r, reason: reasonOf(q.stderr) };
  r.warnings = warningsOf(q.stdout);
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

function firstDifference(stdout: string): string {
  return stdout.split('\n').find((l) => /differ|first/i.test(l)) ?? stdout.split('\n')[0] ?? '';
}
