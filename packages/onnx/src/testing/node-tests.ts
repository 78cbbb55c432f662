// Runs one ONNX backend node test directory (model.onnx + test_data_set_*/{input,output}_*.pb) on QTK.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Tensor } from '@qtk/tensor';
import { ONNX_NODE_TESTS } from '../../../../scripts/system-requirements.js';
import { importOnnx } from '../import/import-onnx.js';
import { decodeModel, decodeTensor } from '../onnx-schema.js';
import { constToTensor, readTensorProto } from '../tensor-proto.js';

export const NODE_TEST_ROOT = ONNX_NODE_TESTS;

export interface NodeTestResult {
  dir: string;
  ok: boolean;
  message: string;
}

function readPb(path: string): Tensor {
  return constToTensor(readTensorProto(decodeTensor(readFileSync(path))));
}

/** |actual - expected| <= atol + rtol * |expected| elementwise (NaN matches NaN), as ONNX's backend tests compare. */
export function compareTensors(actual: Tensor, expected: Tensor, rtol: number, atol: number): string | null {
  const a = actual.values();
  const e = expected.values();
  const same = actual.shape.length === expected.shape.length && actual.shape.every((d, i) => d === expected.shape[i]);
  if (!same && !(actual.size === expected.size && expected.shape.length === 0))
    return `shape [${actual.shape.join(', ')}] != expected [${expected.shape.join(', ')}]`;
  for (let i = 0; i < e.length; i++) {
    const x = Number(a[i]);
    const y = Number(e[i]);
    if (Number.isNaN(y) && Number.isNaN(x)) continue;
    if (x === y) continue;
    if (!(Math.abs(x - y) <= atol + rtol * Math.abs(y))) return `element ${i}: ${x} != expected ${y}`;
  }
  return null;
}

export interface NodeTestOptions {
  rtol?: number;
  atol?: number;
  /**
   * Also fix every float input after the first into the model, as initializers are (weights of Conv, Gemm,
   * BatchNormalization, ...), so the module paths of the importer run rather than the functional ones.
   */
  weightsAsInitializers?: boolean;
}

export interface NodeTestCase {
  set: string;
  /** Graph inputs given at run time (float), by ONNX name, in order. */
  runtime: { name: string; tensor: Tensor }[];
  /** Inputs fixed into the model (integer ones and Resize/Pad parameters). */
  fixed: Record<string, Tensor>;
  expected: Tensor[];
}

/** The test data sets of a node test directory, split as runNodeTest feeds them. */
export function loadNodeTest(dir: string): { bytes: Uint8Array; cases: NodeTestCase[] } {
  const path = join(NODE_TEST_ROOT, dir);
  const bytes = readFileSync(join(path, 'model.onnx'));
  const g = decodeModel(bytes).graph!;
  const inits = new Set((g.initializer ?? []).map((t) => t.name));
  const inputNames = (g.input ?? []).map((i) => i.name ?? '').filter((n) => !inits.has(n));
  const paramInputs = new Set(
    (g.node ?? []).flatMap((n) =>
      ['Resize', 'Upsample', 'Pad', 'Dropout'].includes(n.op_type ?? '') ? (n.input ?? []).slice(1) : [],
    ),
  );
  const sets = readdirSync(path)
    .filter((d) => d.startsWith('test_data_set_'))
    .sort();
  const cases = sets.map((set) => {
    const inputs = inputNames
      .map((_, i) => join(path, set, `input_${i}.pb`))
      .filter(existsSync)
      .map(readPb);
    const fixed: Record<string, Tensor> = {};
    const runtime: { name: string; tensor: Tensor }[] = [];
    inputNames.forEach((n, i) => {
      const t = inputs[i];
      if (!t) return;
      if (t.dtype === 'float32' && !paramInputs.has(n)) runtime.push({ name: n, tensor: t });
      else fixed[n] = t;
    });
    const expected = (g.output ?? []).map((_, i) => readPb(join(path, set, `output_${i}.pb`)));
    return { set, runtime, fixed, expected };
  });
  return { bytes, cases };
}

export function runNodeTest(dir: string, options: NodeTestOptions = {}): NodeTestResult {
  const rtol = options.rtol ?? 1e-3;
  const atol = options.atol ?? 1e-7;
  const path = join(NODE_TEST_ROOT, dir);
  if (!existsSync(join(path, 'model.onnx'))) return { dir, ok: false, message: `missing: ${path}/model.onnx` };
  try {
    const bytes = readFileSync(join(path, 'model.onnx'));
    const g = decodeModel(bytes).graph!;
    const inits = new Set((g.initializer ?? []).map((t) => t.name));
    const inputNames = (g.input ?? []).map((i) => i.name ?? '').filter((n) => !inits.has(n));
    const sets = readdirSync(path)
      .filter((d) => d.startsWith('test_data_set_'))
      .sort();
    if (sets.length === 0) return { dir, ok: false, message: 'no test_data_set_*' };
    for (const set of sets) {
      const inputs = inputNames
        .map((_, i) => join(path, set, `input_${i}.pb`))
        .filter(existsSync)
        .map(readPb);
      const fixed: Record<string, Tensor> = {};
      const paramInputs = new Set(
        (g.node ?? []).flatMap((n) =>
          ['Resize', 'Upsample', 'Pad', 'Dropout'].includes(n.op_type ?? '') ? (n.input ?? []).slice(1) : [],
        ),
      );
      const example: Record<string, Tensor> = {};
      const runtime: Tensor[] = [];
      // Non-float inputs (shapes, axes, indices) are fixed into the model, as a deployment would hold them.
      inputNames.forEach((n, i) => {
        const t = inputs[i];
        if (!t) return;
        if (t.dtype === 'float32' && !paramInputs.has(n) && (i === 0 || !options.weightsAsInitializers)) {
          example[n] = t;
          runtime.push(t);
        } else fixed[n] = t;
      });
      const gm = importOnnx(bytes, { fixedInputs: fixed, exampleInputs: example });
      let out = gm.call(...runtime) as Tensor | Tensor[];
      const outs = Array.isArray(out) ? out : [out];
      const expected = (g.output ?? []).map((_, i) => readPb(join(path, set, `output_${i}.pb`)));
      for (let i = 0; i < expected.length; i++) {
        const got = outs[i];
        if (!got) return { dir, ok: false, message: `${set}: output ${i} missing` };
        const err = compareTensors(got, expected[i]!, rtol, atol);
        if (err) return { dir, ok: false, message: `${set}: output ${i}: ${err}` };
      }
      out = [];
    }
    return { dir, ok: true, message: 'ok' };
  } catch (e) {
    return {
      dir,
      ok: false,
      message: `${(e as Error).name}: ${(e as Error).message.split('\n').slice(0, 3).join(' | ')}`,
    };
  }
}
