// The free batch dim through the shape arithmetic of PyTorch's exports (shape-vectors.ts, batch-probe.ts):
// graphs imported at batch 1 that must run at other batches, and those that cannot, which the import warns about.
import { Tensor, cat, expand, reshape, transpose } from '@qtk/tensor';
import * as ort from 'onnxruntime-node';
import { describe, expect, it } from 'vitest';
import { exportOnnxBytes, importOnnx } from '../index.js';
import { handMadeModel, valueInfo } from '../testing/hand-made-model.js';
import { floats, node } from '../testing/pattern-models.js';
import { int64Proto } from '../tensor-proto.js';

function ramp(shape: number[]): Tensor {
  const n = shape.reduce((a, b) => a * b, 1);
  return new Tensor({ data: Float32Array.from({ length: n }, (_, i) => Math.sin(i)), shape, dtype: 'float32' });
}

function imported(bytes: Uint8Array): { gm: ReturnType<typeof importOnnx>; warnings: string[] } {
  const warnings: string[] = [];
  const gm = importOnnx(bytes, { onWarning: (m) => warnings.push(m) });
  return { gm, warnings };
}

/** onnxruntime-node's first output (dims and values) for input x, on one cpu thread. */
async function runtimeRun(bytes: Uint8Array, x: Tensor): Promise<{ dims: readonly number[]; values: number[] }> {
  const session = await ort.InferenceSession.create(bytes, {
    executionProviders: ['cpu'],
    intraOpNumThreads: 1,
    logSeverityLevel: 3,
  });
  const res = await session.run({
    [session.inputNames[0]!]: new ort.Tensor('float32', x.values() as Float32Array, x.shape),
  });
  const got = res[session.outputNames[0]!]!;
  return { dims: got.dims, values: Array.from(got.data as Float32Array) };
}

const ints = (name: string, values: number[], dims: number[] = [values.length]) => int64Proto(name, values, dims);
const concat = (ins: string[], out: string) => node('Concat', ins, out, { i: { axis: 0 } });

/** ViT's class_token.expand(n, -1, -1) as PyTorch 1.13 exports it, then cat([token, x], 1). */
function classTokenModel(): Uint8Array {
  return handMadeModel(
    [
      node('Shape', ['x'], 's'),
      node('Gather', ['s', 'zero'], 'n'),
      node('Unsqueeze', ['n', 'axis0'], 'n1'),
      concat(['n1', 'minus1', 'minus1'], 'target'),
      node('Reshape', ['target', 'flat'], 'target1'),
      node('Shape', ['target1'], 'len'),
      { ...node('ConstantOfShape', ['len'], 'ones'), attribute: [{ name: 'value', t: ints('v', [1]), type: 4 }] },
      node('Mul', ['ones', 'minus1'], 'minus'),
      node('Equal', ['target1', 'minus'], 'isFree'),
      node('Where', ['isFree', 'ones', 'target1'], 'shape'),
      node('Expand', ['cls', 'shape'], 'token'),
      node('Concat', ['token', 'x'], 'y', { i: { axis: 1 } }),
    ],
    {
      input: [valueInfo('x', ['N', 2, 4])],
      output: [valueInfo('y', ['N', 3, 4])],
      initializer: [
        ints('zero', [0], []),
        ints('axis0', [0]),
        ints('minus1', [-1]),
        ints('flat', [-1]),
        floats('cls', [0.5, -1, 2, 3], [1, 1, 4]),
      ],
    },
  );
}

describe('a free batch through shape arithmetic', () => {
  it('a batch moved to axis 1 by a Transpose, times a constant, is the reshape target [3, 4N] at any batch', async () => {
    // nn.MultiheadAttention's sequence-first layout: Shape of [3, N, 4], Gather 1 = N, Mul by 4
    const bytes = handMadeModel(
      [
        node('Transpose', ['x'], 't', { ints: { perm: [1, 0, 2] } }),
        node('Shape', ['t'], 's'),
        node('Gather', ['s', 'zero'], 'len'),
        node('Gather', ['s', 'one'], 'n'),
        node('Mul', ['n', 'four'], 'n4'),
        node('Unsqueeze', ['len', 'axis0'], 'len1'),
        node('Unsqueeze', ['n4', 'axis0'], 'n41'),
        concat(['len1', 'n41'], 'target'),
        node('Reshape', ['t', 'target'], 'y'),
      ],
      {
        input: [valueInfo('x', ['N', 3, 4])],
        output: [valueInfo('y', [3, 'M'])],
        initializer: [ints('zero', [0], []), ints('one', [1], []), ints('four', [4], []), ints('axis0', [0])],
      },
    );
    const { gm, warnings } = imported(bytes);
    expect(warnings).toEqual([]);
    // exported at batch 1, the model runs at batch 3 in onnxruntime too
    const atBatch3 = await runtimeRun(exportOnnxBytes(gm, [ramp([1, 3, 4])]), ramp([3, 3, 4]));
    expect(atBatch3.dims).toEqual([3, 12]);
    for (const batch of [1, 3]) {
      const x = ramp([batch, 3, 4]);
      const y = gm.call(x) as Tensor;
      expect(y.shape).toEqual([3, 4 * batch]);
      expect(Array.from(y.values())).toEqual(Array.from(reshape(transpose(x, 0, 1), [3, 4 * batch]).values()));
    }
  });

  it('when the second run would go over maxElements, the import takes the first dim and says so once', () => {
    // [1, 3, 4] is 12 elements, within maxElements; the probe's [2, 3, 4] is not
    const bytes = handMadeModel(
      [
        node('Shape', ['x'], 's'),
        node('Gather', ['s', 'zero'], 'n'),
        node('Unsqueeze', ['n', 'axis0'], 'n1'),
        concat(['n1', 'twelve'], 'target'),
        node('Reshape', ['x', 'target'], 'y'),
        node('Shape', ['y'], 's2'),
      ],
      {
        input: [valueInfo('x', ['N', 3, 4])],
        output: [valueInfo('y', ['N', 12])],
        initializer: [ints('zero', [0], []), ints('axis0', [0]), ints('twelve', [12])],
      },
    );
    const warnings: string[] = [];
    const gm = importOnnx(bytes, { maxElements: 12, onWarning: (m) => warnings.push(m) });
    expect(warnings).toEqual([
      "importOnnx: Shape 'block/Shape_s': the import could not tell which dims of its input follow the batch (running the graph one sample longer failed or went over maxElements) and takes the first; if the model fails or differs at another batch, import it at the batch it will run at (inputShapes, or the CLI's --input-shape)",
    ]);
    expect((gm.call(ramp([1, 3, 4])) as Tensor).shape).toEqual([1, 12]);
  });

  it('Mul then Div by constants keeps the batch entry: a [2N, 6] target reshapes [N, 4, 3] at any batch', () => {
    const bytes = handMadeModel(
      [
        node('Shape', ['x'], 's'),
        node('Gather', ['s', 'zero'], 'n'),
        node('Mul', ['n', 'four'], 'n4'),
        node('Div', ['n4', 'two'], 'n2'),
        node('Unsqueeze', ['n2', 'axis0'], 'n21'),
        concat(['n21', 'six'], 'target'),
        node('Reshape', ['x', 'target'], 'y'),
      ],
      {
        input: [valueInfo('x', ['N', 4, 3])],
        output: [valueInfo('y', ['M', 6])],
        initializer: [
          ints('zero', [0], []),
          ints('four', [4], []),
          ints('two', [2], []),
          ints('axis0', [0]),
          ints('six', [6]),
        ],
      },
    );
    const { gm, warnings } = imported(bytes);
    expect(warnings).toEqual([]);
    for (const batch of [1, 3]) {
      const y = gm.call(ramp([batch, 4, 3])) as Tensor;
      expect(y.shape).toEqual([2 * batch, 6]);
    }
  });

  it("Equal(shape, -1) and Where keep ViT's class token free: Expand reads the batch at run time", () => {
    const { gm, warnings } = imported(classTokenModel());
    expect(warnings).toEqual([]);
    const cls = new Tensor({ data: Float32Array.of(0.5, -1, 2, 3), shape: [1, 1, 4], dtype: 'float32' });
    for (const batch of [1, 3]) {
      const x = ramp([batch, 2, 4]);
      const y = gm.call(x) as Tensor;
      expect(y.shape).toEqual([batch, 3, 4]);
      expect(Array.from(y.values())).toEqual(Array.from(cat([expand(cls, [batch, 1, 4]), x], 1).values()));
    }
  });

  it('the class token model exports to ONNX that onnxruntime runs at another batch', async () => {
    const { gm } = imported(classTokenModel());
    const x = ramp([3, 2, 4]);
    const got = await runtimeRun(exportOnnxBytes(gm, [ramp([1, 2, 4])]), x);
    expect(got.dims).toEqual([3, 3, 4]);
    expect(got.values).toEqual(Array.from((gm.call(x) as Tensor).values()));
  });

  it('a class token expanded along a batch on axis 1 exports to ONNX that onnxruntime runs at another batch', async () => {
    // the exported Expand reads the batch with Shape of a [2, N, 4] value: its declared dims must not fix N
    const bytes = handMadeModel(
      [
        node('Transpose', ['x'], 't', { ints: { perm: [1, 0, 2] } }),
        node('Shape', ['t'], 's'),
        node('Gather', ['s', 'one'], 'n'),
        node('Unsqueeze', ['n', 'axis0'], 'n1'),
        concat(['unit', 'n1', 'four'], 'shape'),
        node('Expand', ['cls', 'shape'], 'token'),
        node('Concat', ['token', 't'], 'y', { i: { axis: 0 } }),
      ],
      {
        input: [valueInfo('x', ['N', 2, 4])],
        output: [valueInfo('y', [3, 'N', 4])],
        initializer: [
          ints('one', [1], []),
          ints('axis0', [0]),
          ints('unit', [1]),
          ints('four', [4]),
          floats('cls', [0.5, -1, 2, 3], [1, 1, 4]),
        ],
      },
    );
    const { gm, warnings } = imported(bytes);
    expect(warnings).toEqual([]);
    const x = ramp([3, 2, 4]);
    const got = await runtimeRun(exportOnnxBytes(gm, [ramp([1, 2, 4])]), x);
    expect(got.dims).toEqual([3, 3, 4]);
    expect(got.values).toEqual(Array.from((gm.call(x) as Tensor).values()));
  });

  it('Equal of the batch with 1 would change with the batch: the import warns, naming the node', () => {
    const bytes = handMadeModel(
      [
        node('Shape', ['x'], 's'),
        node('Gather', ['s', 'zero'], 'n'),
        node('Equal', ['n', 'one'], 'single'),
        node('Where', ['single', 'two', 'n'], 'k'),
        node('Unsqueeze', ['k', 'axis0'], 'k1'),
        concat(['k1', 'four'], 'target'),
        node('Expand', ['x', 'target'], 'y'),
      ],
      {
        input: [valueInfo('x', ['N', 4])],
        initializer: [
          ints('zero', [0], []),
          ints('one', [1], []),
          ints('two', [2], []),
          ints('axis0', [0]),
          ints('four', [4]),
        ],
      },
    );
    const { warnings } = imported(bytes);
    expect(warnings).toEqual([
      "importOnnx: Equal 'block/Equal_single' compares the batch with 1, which it cannot follow at run time: the model will only run at the batch it was imported with (set it with inputShapes, or the CLI's --input-shape)",
    ]);
  });

  it('ConstantOfShape and Tile of a shape computed from the batch warn, naming the node', () => {
    const bytes = handMadeModel(
      [
        node('Shape', ['x'], 's'),
        node('ConstantOfShape', ['s'], 'zeros'),
        node('Add', ['x', 'zeros'], 'z'),
        node('Gather', ['s', 'zero'], 'n'),
        node('Unsqueeze', ['n', 'axis0'], 'n1'),
        concat(['n1', 'one'], 'reps'),
        node('Tile', ['z', 'reps'], 'y'),
      ],
      {
        input: [valueInfo('x', ['N', 4])],
        output: [valueInfo('y', ['M', 4])],
        initializer: [ints('zero', [0], []), ints('one', [1]), ints('axis0', [0])],
      },
    );
    const { warnings } = imported(bytes);
    const tail =
      "which it cannot follow at run time: the model will only run at the batch it was imported with (set it with inputShapes, or the CLI's --input-shape)";
    expect(warnings).toEqual([
      `importOnnx: ConstantOfShape 'block/ConstantOfShape_zeros' makes a tensor whose shape is computed from the batch, ${tail}`,
      `importOnnx: Tile 'block/Tile_y' repeats a number of times computed from the batch, ${tail}`,
    ]);
  });
});
