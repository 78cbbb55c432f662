import { DeQuantStub } from '@qtk/nn';
import { eq, ge, gt, le, lt, type Tensor } from '@qtk/tensor';
import { describe, expect, test } from 'vitest';
import { everyPairInputs, ThreeInputNet } from '../testing/three-input-net.js';
import { exportAndCompare, fixedPointOf, uniformInput } from '../testing/fixed-models.js';
import { moduleKinds } from '../testing/integer-inputs.js';

/** Every comparison: two tensors (same and different scales), a scalar, zero and broadcasting. */
class Compare extends ThreeInputNet {
  readonly d0 = new DeQuantStub();
  readonly d1 = new DeQuantStub();
  readonly d2 = new DeQuantStub();
  readonly d3 = new DeQuantStub();
  readonly d4 = new DeQuantStub();
  readonly d5 = new DeQuantStub();
  readonly d6 = new DeQuantStub();
  protected compute(a: Tensor, b: Tensor, c: Tensor): Tensor[] {
    return [
      this.d0.call(gt(a, b)),
      this.d1.call(lt(a, b)),
      this.d2.call(ge(b, a)),
      this.d3.call(le(a, 0.5)),
      this.d4.call(eq(a, a)),
      this.d5.call(gt(b, 0)),
      this.d6.call(ge(c, a)),
    ];
  }
}

// Comparisons are in bayes's capability table only.
describe('integer export: FixedCompare', () => {
  for (const dtype of ['qint8', 'qint16'] as const)
    for (const opset of [11, 13])
      test(`bayes ${dtype}, opset ${opset}: the sign of the march's a - b accumulator, as QTK`, async () => {
        const calib = [
          uniformInput([1, 1, 16, 16], 1, -3, 3),
          uniformInput([1, 1, 16, 16], 2, -0.4, 0.4),
          uniformInput([1, 1, 1, 16], 3, -1, 1),
        ];
        const fixed = fixedPointOf(new Compare(), { march: 'bayes', dtype, calibration: [calib as never] });
        expect(moduleKinds(fixed).filter((k) => k === 'FixedCompare')).toHaveLength(7);
        const inputs = everyPairInputs(fixed, dtype);
        const { summary, comparison } = await exportAndCompare(fixed, inputs, { opset });
        const compared = comparison.nodes.filter((n) => n.op === 'FixedCompare');
        expect(compared.map((n) => n.dtype)).toEqual(new Array(7).fill('qbool'));
        expect(summary).toBe(`all ${comparison.nodes.length} compared values identical`);
      });
});
