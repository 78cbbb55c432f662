// Models imported at opsets 18 to 21 export again: what every opset can say stays at the default opset 13,
// and what needs a newer one (a dilated AveragePool, Pad's wrap, ScatterND's max, half_pixel_symmetric) is an
// OnnxExportError naming that opset (the CLI's export then picks it).
import { Generator, randn, type Tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { exportOnnxBytes, importOnnx, OnnxExportError } from '../index.js';
import { decodeModel } from '../onnx-schema.js';
import { float32s, int64s, op, opsetModel, runtimeOutputs, type ModelSpec } from '../testing/opset-models.js';

const x = (shape: number[], seed = 11) => randn(shape, { generator: new Generator(seed) });

/** Imports `spec`, exports it at `opset` (or says which opset it needs), and runs the export in onnxruntime. */
async function roundTrip(spec: ModelSpec, input: Tensor, opset: number) {
  const gm = importOnnx(opsetModel(spec));
  const bytes = exportOnnxBytes(gm, [input], { opset });
  const [ort] = await runtimeOutputs(bytes, { [decodeModel(bytes).graph!.input![0]!.name!]: input });
  const qtk = Array.from((gm.call(input) as Tensor).values() as Float32Array);
  const diff = Math.max(...qtk.map((v, i) => Math.abs(v - ort![i]!)));
  return { bytes, diff, opTypes: (decodeModel(bytes).graph!.node ?? []).map((n) => n.op_type) };
}

function neededOpset(spec: ModelSpec, input: Tensor): number | undefined {
  try {
    exportOnnxBytes(importOnnx(opsetModel(spec)), [input], { opset: 13 });
  } catch (e) {
    expect(e).toBeInstanceOf(OnnxExportError);
    return (e as OnnxExportError).neededOpset;
  }
  return undefined;
}

describe('exporting models imported at opsets 18 to 21', () => {
  it('opset-18 reductions (Min, L2 and LogSumExp among them) and Pad axes export at 13', async () => {
    const spec = {
      nodes: [
        op('Pad', ['x', 'pads', '', 'axes'], ['p'], { mode: 'edge' }),
        op('ReduceMin', ['p', 'raxes'], ['m'], { keepdims: 1 }),
        op('ReduceL2', ['p', 'raxes'], ['l2'], { keepdims: 1 }),
        op('ReduceLogSumExp', ['p', 'raxes'], ['lse'], { keepdims: 1 }),
        op('Add', ['m', 'l2'], ['s']),
        op('Add', ['s', 'lse'], ['y']),
      ],
      inputs: { x: [2, 3, 4] },
      outputs: ['y'],
      initializers: [int64s('pads', [1, 2]), int64s('axes', [2]), int64s('raxes', [1])],
      opset: 18,
    };
    const r = await roundTrip(spec, x([2, 3, 4]), 13);
    expect(r.diff).toBeLessThan(1e-6);
  });

  const needs: [string, ModelSpec, number[], number][] = [
    [
      'a dilated AveragePool',
      {
        nodes: [op('AveragePool', ['x'], ['y'], { kernel_shape: [2, 2], dilations: [2, 2] })],
        inputs: { x: [1, 2, 5, 5] },
        outputs: ['y'],
        opset: 19,
      },
      [1, 2, 5, 5],
      19,
    ],
    [
      "Pad's wrap",
      {
        nodes: [op('Pad', ['x', 'pads'], ['y'], { mode: 'wrap' })],
        inputs: { x: [2, 4] },
        outputs: ['y'],
        initializers: [int64s('pads', [0, 1, 0, 2])],
        opset: 19,
      },
      [2, 4],
      19,
    ],
    [
      "ScatterND's max",
      {
        nodes: [op('ScatterND', ['x', 'idx', 'upd'], ['y'], { reduction: 'max' })],
        inputs: { x: [3, 2] },
        outputs: ['y'],
        initializers: [int64s('idx', [1, 1], [2, 1]), float32s('upd', [5, -5, 0, 9], [2, 2])],
        opset: 18,
      },
      [3, 2],
      18,
    ],
    [
      'half_pixel_symmetric',
      {
        nodes: [
          op('Resize', ['x', '', 'scales'], ['y'], {
            mode: 'linear',
            coordinate_transformation_mode: 'half_pixel_symmetric',
          }),
        ],
        inputs: { x: [1, 1, 4, 5] },
        outputs: ['y'],
        initializers: [float32s('scales', [1, 1, 0.6, 1.5])],
        opset: 19,
      },
      [1, 1, 4, 5],
      19,
    ],
  ];
  for (const [what, spec, shape, opset] of needs) {
    it(`${what} needs opset ${opset} to export, and then agrees with QTK`, async () => {
      const input = x(shape);
      expect(neededOpset(spec, input)).toBe(opset);
      const r = await roundTrip(spec, input, opset);
      expect(r.diff).toBeLessThan(1e-5);
    });
  }
});
