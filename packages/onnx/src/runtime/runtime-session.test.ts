// RuntimeModel runs an exported float model in onnxruntime-node (the module passed as a value, no cast): the
// outputs match QTK's forward within float rounding, at another batch size too, and bad input is a typed error.
import { Conv2d, Flatten, Linear, Module, ReLU } from '@qtk/nn';
import { Generator, randn, type Tensor } from '@qtk/tensor';
import * as ort from 'onnxruntime-node';
import { describe, expect, it } from 'vitest';
import { exportOnnxBytes } from '../export-onnx.js';
import { RuntimeModel, RuntimeRunError } from './runtime-session.js';

class ConvHead extends Module {
  readonly conv = new Conv2d(3, 4, 3, { generator: new Generator(1) });
  readonly relu = new ReLU();
  readonly flatten = new Flatten();
  readonly fc = new Linear(4 * 4 * 4, 5, { generator: new Generator(2) });
  forward(x: Tensor): Tensor {
    return this.fc.call(this.flatten.call(this.relu.call(this.conv.call(x))));
  }
}

function largestDifference(a: Tensor, b: Tensor): number {
  const x = a.values();
  const y = b.values();
  let worst = 0;
  for (let i = 0; i < x.length; i++) worst = Math.max(worst, Math.abs(x[i]! - y[i]!));
  return worst;
}

describe('RuntimeModel', () => {
  const model = new ConvHead();
  model.eval();
  const bytes = exportOnnxBytes(model, randn([2, 3, 6, 6], { generator: new Generator(3) }));

  it('gives QTK forward values within float rounding, at a batch size the export did not see', async () => {
    const runtime = await RuntimeModel.create(ort, bytes);
    const x = randn([7, 3, 6, 6], { generator: new Generator(4) });
    const [y] = await runtime.outputs([x]);
    const qtk = model.call(x);
    expect(y!.shape).toEqual([7, 5]);
    expect(largestDifference(qtk, y!)).toBeLessThan(1e-5);
    expect(runtime.inputNames).toHaveLength(1);
    await runtime.release();
  });

  it('refuses bytes the runtime cannot load, and a wrong input count, with RuntimeRunError', async () => {
    await expect(RuntimeModel.create(ort, new Uint8Array([1, 2, 3]))).rejects.toThrow(RuntimeRunError);
    const runtime = await RuntimeModel.create(ort, bytes);
    const x = randn([1, 3, 6, 6]);
    await expect(runtime.run([x, x])).rejects.toThrow(/takes 1 input\(s\) \(x\), given 2/);
    await expect(runtime.run([randn([1, 3, 5, 5])])).rejects.toThrow(/onnxruntime failed to run a batch/);
    await runtime.release();
  });
});
