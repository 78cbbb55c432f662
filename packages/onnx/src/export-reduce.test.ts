import { symbolicTrace } from '@qtk/ir';
import { Module } from '@qtk/nn';
import { Generator, mean, randn, sum, type Tensor } from '@qtk/tensor';
import * as ort from 'onnxruntime-node';
import { describe, expect, it } from 'vitest';
import { exportOnnxBytes } from './index.js';
import { decodeModel } from './onnx-schema.js';

class Reductions extends Module {
  forward(x: Tensor): Tensor {
    return mean(x, [2, 3], true).add(sum(x, 1, true).mean(-1, true));
  }
}

describe('reductions at every opset', () => {
  const gm = symbolicTrace(new Reductions());
  const x = randn([2, 3, 4, 5], { generator: new Generator(1) });
  const want = (gm.call(x) as Tensor).values();

  it.each([13, 17, 18, 21])(
    'opset %i: axes as the opset wants them, and onnxruntime computes what QTK does',
    async (opset) => {
      const bytes = exportOnnxBytes(gm, x, { opset });
      const means = decodeModel(bytes).graph!.node!.filter((n) => n.op_type === 'ReduceMean');
      expect(means).toHaveLength(2);
      for (const n of means) {
        expect(n.input!.length).toBe(opset >= 18 ? 2 : 1);
        expect(n.attribute!.some((a) => a.name === 'axes')).toBe(opset < 18);
      }
      const session = await ort.InferenceSession.create(bytes, { logSeverityLevel: 3 });
      const res = await session.run({
        x: new ort.Tensor('float32', Float32Array.from(x.values() as Float32Array), x.shape),
      });
      const got = res.output!.data as Float32Array;
      for (let i = 0; i < want.length; i++) expect(Math.abs(got[i]! - want[i]!)).toBeLessThan(1e-5);
    },
  );
});
