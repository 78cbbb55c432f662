// Moved from @qtk/onnx's import-hostile.test.ts: ONNX names that would shadow module members import, run and
// prepare for QAT (the preparation needs @qtk/core, which @qtk/onnx's tests do not load).
import { importOnnx } from '@qtk/onnx';
import { floatInitializer, handMadeModel, valueInfo } from '@qtk/onnx/testing';
import { type Tensor, randn } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';

const f32 = (name: string, dims: (number | string)[]) => valueInfo(name, dims);
const model = handMadeModel;

describe('ONNX names never shadow module members (issue 12.3)', () => {
  for (const name of ['eval', 'train', 'registerModule', '__proto__', 'inputSpecs']) {
    it(`a node, an input and an initializer named '${name}' import, run and prepare for QAT`, async () => {
      const bytes = model(
        [
          { op_type: 'Conv', name, input: [name, 'w'], output: ['c'] },
          { op_type: 'Relu', name: `${name}`, input: ['c'], output: ['r'] },
          { op_type: 'Add', name: `${name}`, input: ['r', name === '__proto__' ? 'b' : `${name}_b`], output: ['y'] },
        ],
        {
          input: [f32(name, [1, 2, 6, 6])],
          output: [f32('y', [1, 3, 4, 4])],
          initializer: [
            floatInitializer('w', [3, 2, 3, 3]),
            floatInitializer(name === '__proto__' ? 'b' : `${name}_b`, [1, 3, 1, 1]),
          ],
        },
      );
      const gm = importOnnx(bytes);
      expect(typeof gm.eval).toBe('function');
      expect(typeof gm.train).toBe('function');
      expect(typeof gm.registerModule).toBe('function');
      expect(Array.isArray(gm.inputSpecs)).toBe(true);
      expect(Object.getPrototypeOf(gm)).toBe(Object.getPrototypeOf(importOnnx(bytes)));
      const x = randn([1, 2, 6, 6]);
      const y = gm.call(x) as Tensor;
      expect(y.shape).toEqual([1, 3, 4, 4]);
      gm.train();
      gm.eval();
      expect(gm.namedChildren().map(([n]) => n)).toContain(`${name}_`);
      expect((importOnnx(bytes, { exampleInputs: {} }).call(x) as Tensor).shape).toEqual([1, 3, 4, 4]);
      // Loaded here so a problem in @qtk/core fails only this step.
      await import('@qtk/march-bayes');
      const { prepareQatFx } = await import('@qtk/core');
      const { defaultQatQconfig } = await import('@qtk/fake-quant');
      const qat = prepareQatFx(
        gm,
        { global: defaultQatQconfig },
        { march: 'bayes', inputQuantStubs: { scale: 1 / 128 } },
      );
      expect((qat as { call(t: Tensor): Tensor }).call(x).shape).toEqual([1, 3, 4, 4]);
    });
  }
});
