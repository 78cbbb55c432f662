import { DeQuantStub } from '@qtk/nn';
import { cat, maximum, minimum, type Tensor } from '@qtk/tensor';
import { describe, expect, test } from 'vitest';
import { everyPairInputs, ThreeInputNet } from '../testing/three-input-net.js';
import { exportAndCompare, fixedPointOf, uniformInput } from '../testing/fixed-models.js';
import { moduleKinds } from '../testing/integer-inputs.js';

/** maximum / minimum of two tensors, with a scalar on either side, and broadcasting. */
class MinMax extends ThreeInputNet {
  readonly dequant = new DeQuantStub();
  protected compute(a: Tensor, b: Tensor, c: Tensor): Tensor {
    const outs = [maximum(a, b), minimum(a, b), maximum(a, 0.5), minimum(-0.25, b), maximum(c, a)];
    return this.dequant.call(cat(outs, 1));
  }
}

// Max / Min are in bayes's capability table only.
describe('integer export: FixedMinMax', () => {
  for (const dtype of ['qint8', 'qint16'] as const)
    test(`bayes ${dtype}: both operands on the output grid, then the integer max / min, as QTK`, async () => {
      const calib = [
        uniformInput([1, 1, 16, 16], 1, -3, 3),
        uniformInput([1, 1, 16, 16], 2, -0.4, 0.4),
        uniformInput([1, 1, 1, 16], 3, -1, 1),
      ];
      const fixed = fixedPointOf(new MinMax(), { march: 'bayes', dtype, calibration: [calib as never] });
      expect(moduleKinds(fixed).filter((k) => k === 'FixedMinMax')).toHaveLength(5);
      const inputs = everyPairInputs(fixed, dtype);
      const { summary, comparison } = await exportAndCompare(fixed, inputs);
      expect(comparison.nodes.filter((n) => n.op === 'FixedMinMax')).toHaveLength(5);
      expect(summary).toBe(`all ${comparison.nodes.length} compared values identical`);
    });
});
