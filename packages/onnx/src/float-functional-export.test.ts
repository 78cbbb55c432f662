// FloatFunctional's add and mul with a number operand (ff.mul(x, 0.5), as an imported Mul by a constant becomes)
// export with the number as a scalar initializer: onnxruntime loads the file and computes QTK's values.
import { symbolicTrace } from '@qtk/ir';
import { Conv2d, FloatFunctional, Module } from '@qtk/nn';
import { Generator, randn, type Tensor } from '@qtk/tensor';
import * as ort from 'onnxruntime-node';
import { describe, expect, it } from 'vitest';
import { decodeModel, exportOnnxBytes, RuntimeModel } from './index.js';

class ScaledSum extends Module {
  readonly conv = new Conv2d(2, 3, 3, { generator: new Generator(8) });
  readonly scale = new FloatFunctional();
  readonly shift = new FloatFunctional();
  forward(x: Tensor): Tensor {
    return this.shift.add(this.scale.mul(this.conv.call(x), 0.5), 2);
  }
}

describe('FloatFunctional with a number operand', () => {
  const model = new ScaledSum();
  model.eval();
  const bytes = exportOnnxBytes(symbolicTrace(model), randn([2, 2, 5, 5], { generator: new Generator(1) }));

  it('writes the number as a second input of Mul and Add', () => {
    const nodes = decodeModel(bytes).graph!.node!.filter((n) => n.op_type === 'Mul' || n.op_type === 'Add');
    expect(nodes.map((n) => [n.op_type, n.input!.length])).toEqual([
      ['Mul', 2],
      ['Add', 2],
    ]);
  });

  it('runs in onnxruntime-node with QTK values', async () => {
    const runtime = await RuntimeModel.create(ort, bytes);
    const x = randn([3, 2, 5, 5], { generator: new Generator(2) });
    const [y] = await runtime.outputs([x]);
    const want = model.call(x).values();
    const got = y!.values();
    expect(got.length).toBe(want.length);
    for (let i = 0; i < got.length; i++) expect(Math.abs(got[i]! - want[i]!)).toBeLessThan(1e-5);
    await runtime.release();
  });
});
