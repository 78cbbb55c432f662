// MatMul + Add of a bias become one Linear, also when the weight and bias come through Identity nodes
// (PyTorch's exporter writes a parameter equal to an earlier one, as in the cloned layers of a freshly
// built nn.TransformerEncoder, as an Identity of it), and paddle2onnx's Conv / ConvTranspose / MatMul
// followed by an Add of a Constant node's per-channel vector take it as their bias.
import { importedNamesOf } from '@qtk/ir';
import { Conv2d, ConvTranspose2d, Linear } from '@qtk/nn';
import { Generator, noGrad, rand, Tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { importOnnx } from '../index.js';
import { floatInitializer, handMadeModel, valueInfo } from '../testing/hand-made-model.js';
import { relativeError, runtimeOutput } from '../testing/pattern-models.js';

const W = [1, 2, 0, -1, 0.5, 0, 0, 3, -2, 1, 1, 0, 0, 0, 2, 1]; // [4, 4], x·W
const B = [0.5, -1, 2, 0.25];

describe('importOnnx: MatMul + Add as Linear', () => {
  it('folds a weight and a bias read through Identity nodes, bias first in the Add', () => {
    const bytes = handMadeModel(
      [
        { op_type: 'Identity', input: ['w0'], output: ['w1'], name: 'Identity_w' },
        { op_type: 'Identity', input: ['b0'], output: ['b1'], name: 'Identity_b' },
        { op_type: 'MatMul', input: ['x', 'w1'], output: ['mm'], name: 'fc/MatMul' },
        { op_type: 'Add', input: ['b1', 'mm'], output: ['y'], name: 'fc/Add' },
      ],
      { initializer: [floatInitializer('w0', [4, 4], W), floatInitializer('b0', [4], B)] },
    );
    const gm = importOnnx(bytes);
    const calls = gm.graph.nodes.filter((n) => n.op !== 'placeholder' && n.op !== 'output');
    expect(calls.map((n) => n.op)).toEqual(['call_module']);
    const fc = gm.getSubmodule(calls[0]!.target);
    expect(fc).toBeInstanceOf(Linear);
    const x = new Tensor({ data: Float32Array.from([1, -1, 2, 0.5]), shape: [1, 4], dtype: 'float32' });
    const y = noGrad(() => (gm as unknown as { call(x: Tensor): Tensor }).call(x)).values();
    // x·W + b by hand
    const want = [0, 1, 2, 3].map((j) => [1, -1, 2, 0.5].reduce((s, xi, i) => s + xi * W[i * 4 + j]!, 0) + B[j]!);
    expect(Array.from(y)).toEqual(want);
  });
});

/** A Constant node holding a float tensor, as paddle2onnx writes weights and biases. */
const constantNode = (output: string, dims: number[], values: number[]) => ({
  op_type: 'Constant',
  input: [],
  output: [output],
  attribute: [{ name: 'value', type: 4, t: floatInitializer('', dims, values) }],
});

const seq = (n: number, scale: number) => Array.from({ length: n }, (_, i) => Math.sin(i * 1.7 + 0.3) * scale);

describe('importOnnx: an Add of a per-channel constant after a layer becomes its bias', () => {
  it("paddle2onnx's ConvTranspose → Add [1, C, 1, 1] → Conv → Add [C, 1, 1] → MatMul → Add [C]: three layers with biases, equal to onnxruntime", async () => {
    const bytes = handMadeModel(
      [
        constantNode('wt', [2, 3, 2, 2], seq(24, 0.5)),
        constantNode('bt', [1, 3, 1, 1], [0.5, -1, 2]),
        {
          op_type: 'ConvTranspose',
          input: ['x', 'wt'],
          output: ['t'],
          name: 'p2o.ConvTranspose.0',
          attribute: [{ name: 'strides', type: 7, ints: [2, 2] }],
        },
        { op_type: 'Add', input: ['t', 'bt'], output: ['t1'], name: 'p2o.Add.0' },
        constantNode('wc', [4, 3, 1, 1], seq(12, 0.7)),
        constantNode('bc', [4, 1, 1], [0.25, 0, -0.5, 1]),
        { op_type: 'Conv', input: ['t1', 'wc'], output: ['c'], name: 'p2o.Conv.0' },
        { op_type: 'Add', input: ['bc', 'c'], output: ['c1'], name: 'p2o.Add.1' },
        { op_type: 'Flatten', input: ['c1'], output: ['f'], name: 'p2o.Flatten.0' },
        constantNode('wm', [64, 5], seq(320, 0.2)),
        constantNode('bm', [5], [1, 2, 3, 4, 5]),
        { op_type: 'MatMul', input: ['f', 'wm'], output: ['m'], name: 'p2o.MatMul.0' },
        { op_type: 'Add', input: ['m', 'bm'], output: ['y'], name: 'p2o.Add.2' },
      ],
      { input: [valueInfo('x', [1, 2, 2, 2])], output: [valueInfo('y', [1, 5])] },
    );
    const gm = importOnnx(bytes);
    const calls = gm.graph.nodes.filter((n) => n.op === 'call_module');
    const modules = calls.map((n) => gm.getSubmodule(n.target));
    const layers = modules.filter((m) => m instanceof ConvTranspose2d || m instanceof Conv2d || m instanceof Linear);
    expect(layers.map((m) => m.constructor)).toEqual([ConvTranspose2d, Conv2d, Linear]);
    expect(gm.graph.nodes.filter((n) => n.op === 'call_function' && String(n.target) === 'add')).toEqual([]);
    expect(Array.from((layers[0] as ConvTranspose2d).bias!.values())).toEqual([0.5, -1, 2]);
    expect(Array.from((layers[2] as Linear).bias!.values())).toEqual([1, 2, 3, 4, 5]);
    // each layer answers to its own ONNX name and the Add's
    expect(importedNamesOf(calls[0]!)).toEqual(['p2o.ConvTranspose.0', 'p2o.Add.0']);
    const x = rand([1, 2, 2, 2], { low: -1, high: 1, generator: new Generator(5) });
    const y = noGrad(() => (gm as unknown as { call(x: Tensor): Tensor }).call(x)).values();
    expect(relativeError(y, await runtimeOutput(bytes, x))).toBeLessThan(1e-6);
  });

  it('an Add whose constant is not per channel stays an Add', () => {
    const bytes = handMadeModel(
      [
        constantNode('wc', [2, 2, 1, 1], [1, 0, 0, 1]),
        constantNode('b', [2], [1, -1]), // [C] broadcasts along W, not the channels
        { op_type: 'Conv', input: ['x', 'wc'], output: ['c'], name: 'conv' },
        { op_type: 'Add', input: ['c', 'b'], output: ['y'], name: 'add' },
      ],
      { input: [valueInfo('x', [1, 2, 2, 2])], output: [valueInfo('y', [1, 2, 2, 2])] },
    );
    const gm = importOnnx(bytes);
    const conv = gm.graph.nodes.find((n) => n.op === 'call_module')!;
    expect((gm.getSubmodule(conv.target) as Conv2d).bias).toBeNull();
    const x = new Tensor({ data: Float32Array.from([1, 2, 3, 4, 5, 6, 7, 8]), shape: [1, 2, 2, 2], dtype: 'float32' });
    const y = noGrad(() => (gm as unknown as { call(x: Tensor): Tensor }).call(x)).values();
    expect(Array.from(y)).toEqual([2, 1, 4, 3, 6, 5, 8, 7]);
  });
});
