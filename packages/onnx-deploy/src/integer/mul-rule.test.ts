import { DeQuantStub, FloatFunctional } from '@qtk/nn';
import { cat, mul, type Tensor } from '@qtk/tensor';
import { describe, expect, test } from 'vitest';
import { everyPairInputs, ThreeInputNet } from '../testing/three-input-net.js';
import { exportAndCompare, fixedPointOf, uniformInput } from '../testing/fixed-models.js';
import { MARCH_DTYPES, moduleKinds } from '../testing/integer-inputs.js';

/** mul of two tensors, with a scalar on either side, and broadcasting. */
class Mul extends ThreeInputNet {
  readonly mul = new FloatFunctional();
  readonly mulScalar = new FloatFunctional();
  readonly dequant = new DeQuantStub();
  protected compute(a: Tensor, b: Tensor, c: Tensor): Tensor {
    const outs = [this.mul.mul(a, b), this.mulScalar.mulScalar(a, -0.3), mul(2.5, b), mul(c, a)];
    return this.dequant.call(cat(outs, 1));
  }
}

describe('integer export: FixedMul', () => {
  for (const { march, dtype } of MARCH_DTYPES)
    test(`${march} ${dtype}: every pair of operand integers gives QTK's product in onnxruntime`, async () => {
      // calibration products stay small (x and y rarely both large): the grid's products saturate
      const cx = uniformInput([1, 1, 16, 16], 1, -3, 3);
      const cy = uniformInput([1, 1, 16, 16], 2, -0.5, 0.5);
      cy.values().forEach((v, i, arr) => {
        arr[i] = Math.abs(cx.values()[i]!) > 1 ? v / 10 : v;
      });
      const cz = uniformInput([1, 1, 1, 16], 3, -1, 1);
      const fixed = fixedPointOf(new Mul(), { march, dtype, calibration: [[cx, cy, cz] as never] });
      expect(moduleKinds(fixed).filter((k) => k === 'FixedMul')).toHaveLength(4);
      const inputs = everyPairInputs(fixed, dtype);
      const { summary, comparison } = await exportAndCompare(fixed, inputs);
      expect(comparison.nodes.filter((n) => n.op === 'FixedMul')).toHaveLength(4);
      expect(summary).toBe(`all ${comparison.nodes.length} compared values identical`);
    });
});
