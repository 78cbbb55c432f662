import { DeQuantStub, FloatFunctional, Module, QuantStub } from '@qtk/nn';
import { mean, sum, type Tensor } from '@qtk/tensor';
import { describe, expect, test } from 'vitest';
import { exportAndCompare, fixedPointOf, uniformInput } from '../testing/fixed-models.js';
import { MARCH_DTYPES, moduleKinds, onGrid, rangeInts } from '../testing/integer-inputs.js';

/** sum / mean over spatial axes (kept), channels, the last axis and everything. */
class Reduce extends Module {
  readonly quant = new QuantStub();
  readonly spatialMean = new FloatFunctional();
  readonly channelSum = new FloatFunctional();
  readonly d0 = new DeQuantStub();
  readonly d1 = new DeQuantStub();
  readonly d2 = new DeQuantStub();
  readonly d3 = new DeQuantStub();
  readonly d4 = new DeQuantStub();
  forward(x: Tensor): Tensor[] {
    const q = this.quant.call(x);
    return [
      this.d0.call(this.spatialMean.mean(q, [2, 3], true)),
      this.d1.call(this.channelSum.sum(q, 1)),
      this.d2.call(sum(q, -1, true)),
      this.d3.call(mean(q, 1)),
      this.d4.call(mean(q)),
    ];
  }
}

describe('integer export: FixedReduce', () => {
  for (const { march, dtype } of MARCH_DTYPES)
    test(`${march} ${dtype}: exact sums requantized as QTK does`, async () => {
      const fixed = fixedPointOf(new Reduce(), { march, dtype, calibration: [uniformInput([2, 4, 8, 8], 1, -0.2, 1)] });
      expect(moduleKinds(fixed).filter((k) => k === 'FixedReduce')).toHaveLength(5);
      // random integers over the whole range, one block all at the maximum (sums beyond the calibrated range saturate)
      const r = rangeInts(dtype, 512, 9);
      const ints = Int32Array.from({ length: 512 }, (_, i) => r[(i * 193) % 512]!);
      ints.fill(dtype === 'qint8' ? 127 : 32767, 0, 64);
      const x = onGrid(fixed, 'quant', ints, [2, 4, 8, 8]);
      const { summary, comparison } = await exportAndCompare(fixed, x);
      expect(comparison.nodes.filter((n) => n.op === 'FixedReduce')).toHaveLength(5);
      expect(summary).toBe(`all ${comparison.nodes.length} compared values identical`);
    });
});
