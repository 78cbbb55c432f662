// Telling float, QDQ and integer ONNX files apart, and a hand-made QDQ file evaluated in onnxruntime-node.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DataType, encodeModel, type ModelMsg, type NodeMsg } from '@qtk/onnx';
import { Generator, rand } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { onnxFormOf } from './onnx-file.js';
import { npyBytes, run, tempDir } from './testing/fixtures.js';

const tensorType = (elem: number, dims: (number | string)[]) => ({
  tensor_type: {
    elem_type: elem,
    shape: { dim: dims.map((d) => (typeof d === 'string' ? { dim_param: d } : { dim_value: d })) },
  },
});

function model(nodes: NodeMsg[], initializer: NonNullable<ModelMsg['graph']>['initializer'] = []): ModelMsg {
  return {
    ir_version: 7,
    opset_import: [{ domain: '', version: 13 }],
    graph: {
      name: 'g',
      node: nodes,
      initializer,
      input: [{ name: 'x', type: tensorType(DataType.FLOAT, ['N', 10]) }],
      output: [{ name: 'y', type: tensorType(DataType.FLOAT, ['N', 10]) }],
    },
  };
}

/** A Cast of v{i} (of x when i is 0) to v{i+1}. */
const cast = (to: number, i: number): NodeMsg => ({
  op_type: 'Cast',
  input: [i === 0 ? 'x' : `v${i}`],
  output: [`v${i + 1}`],
  attribute: [{ name: 'to', type: 2, i: to }],
});

/** x → QuantizeLinear (scale 1/8, int8) → DequantizeLinear → Relu → y. */
function qdqModel(): ModelMsg {
  const scalar = (name: string, elem: number, raw: Uint8Array) => ({ name, data_type: elem, dims: [], raw_data: raw });
  return model(
    [
      { op_type: 'QuantizeLinear', input: ['x', 's', 'z'], output: ['q'], name: 'quant' },
      { op_type: 'DequantizeLinear', input: ['q', 's', 'z'], output: ['d'], name: 'dequant' },
      { op_type: 'Relu', input: ['d'], output: ['y'], name: 'relu' },
    ],
    [
      scalar('s', DataType.FLOAT, new Uint8Array(new Float32Array([0.125]).buffer)),
      scalar('z', DataType.INT8, new Uint8Array([0])),
    ],
  );
}

describe('onnxFormOf', () => {
  it('float, QDQ and integer files, by their nodes', () => {
    expect(onnxFormOf(model([{ op_type: 'Relu', input: ['x'], output: ['y'] }]))).toEqual({
      kind: 'float',
      evidence: '',
    });
    // casts to int64 are shape arithmetic of float models; bool and float casts too
    expect(onnxFormOf(model([cast(DataType.INT64, 0), cast(DataType.BOOL, 1), cast(DataType.DOUBLE, 2)])).kind).toBe(
      'float',
    );
    // paddle2onnx casts shapes to int32: a Cast of a Shape's output, or of a constant, is index arithmetic
    const shapeCast = model([
      { op_type: 'Shape', input: ['x'], output: ['v0s'] },
      { op_type: 'Cast', input: ['v0s'], output: ['v1s'], attribute: [{ name: 'to', type: 2, i: DataType.INT32 }] },
      { op_type: 'Constant', input: [], output: ['c'] },
      { op_type: 'Cast', input: ['c'], output: ['ci'], attribute: [{ name: 'to', type: 2, i: DataType.INT32 }] },
      { op_type: 'Relu', input: ['x'], output: ['y'] },
    ]);
    expect(onnxFormOf(shapeCast)).toEqual({ kind: 'float', evidence: '' });
    expect(onnxFormOf(qdqModel())).toEqual({
      kind: 'qdq',
      evidence: '1 QuantizeLinear node, 1 DequantizeLinear node',
    });
    expect(onnxFormOf(model([cast(DataType.DOUBLE, 0), cast(DataType.INT8, 1), cast(DataType.INT32, 2)]))).toEqual({
      kind: 'integer',
      evidence: '2 integer Cast nodes',
    });
    // integer arithmetic wins over the QDQ boundaries around it
    const mixed = qdqModel();
    mixed.graph!.node!.push({ op_type: 'MatMulInteger', input: ['q', 'q'], output: ['m'] });
    expect(onnxFormOf(mixed)).toEqual({ kind: 'integer', evidence: '1 MatMulInteger node' });
  });
});

describe('qtk eval of a QDQ file', () => {
  it('runs in onnxruntime-node by default, with the accuracy of the quantized scores; --engine qtk says why not', async () => {
    const dir = tempDir();
    const path = join(dir, 'qdq.onnx');
    writeFileSync(path, encodeModel(qdqModel()));
    const data = join(dir, 'data');
    mkdirSync(data);
    const n = 30;
    const x = rand([n, 10], { low: -20, high: 20, generator: new Generator(2) }).values() as Float32Array;
    writeFileSync(join(data, 'x.npy'), npyBytes([n, 10], x));
    const labels = Array.from({ length: n }, (_, i) => (i * 7) % 10);
    writeFileSync(join(data, 'labels.txt'), labels.join('\n'));
    // the scores are relu(q) / 8 with q = sat(round_half_even(8x)): the first largest q is the prediction
    let want = 0;
    for (let i = 0; i < n; i++) {
      const q = Array.from(x.subarray(i * 10, i * 10 + 10), (v) => {
        const r = Math.round(8 * v);
        const even = Math.abs(8 * v - Math.trunc(8 * v)) === 0.5 ? 2 * Math.round((8 * v) / 2) : r;
        return Math.max(0, Math.min(127, even));
      });
      if (q.indexOf(Math.max(...q)) === labels[i]) want++;
    }
    expect(want).toBeGreaterThan(0);
    const r = await run('eval', path, '--data', data, '--batch', '8');
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`model:     ${path} (QDQ ONNX)`);
    expect(r.stdout).toMatch(/^runtime: {3}onnxruntime-node /m);
    expect(r.stdout).toContain(`accuracy:  ${((100 * want) / n).toFixed(2)}% (${want} / ${n})`);

    const q = await run('eval', path, '--data', data, '--engine', 'qtk');
    expect(q.code).toBe(1);
    expect(q.stderr).toContain(
      `--engine qtk cannot run ${path}: it is QDQ ONNX (1 QuantizeLinear node, 1 DequantizeLinear node), and QTK imports float ONNX only`,
    );
  });
});
