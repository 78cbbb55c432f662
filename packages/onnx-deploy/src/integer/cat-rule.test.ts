import { getDefaultQatQconfig } from '@qtk/fake-quant';
import type { Quantize } from '@qtk/fixed-point';
import { DeQuantStub, FloatFunctional } from '@qtk/nn';
import { cat, type Tensor } from '@qtk/tensor';
import { describe, expect, test } from 'vitest';
import { ThreeInputNet } from '../testing/three-input-net.js';
import { exportAndCompare, fixedPointOf, uniformInput } from '../testing/fixed-models.js';
import { MARCH_DTYPES, moduleKinds, onGrid, rangeInts } from '../testing/integer-inputs.js';
import type { ObserverDType } from '@qtk/spec';

/** Three inputs of different scales joined (each requantized to the common scale), along channels and the last axis. */
class Cat extends ThreeInputNet {
  readonly cat = new FloatFunctional();
  readonly dequant = new DeQuantStub();
  readonly dequant2 = new DeQuantStub();
  protected compute(a: Tensor, b: Tensor, c: Tensor): Tensor[] {
    return [this.dequant.call(this.cat.cat([a, b, c], 1)), this.dequant2.call(cat([b, a], -1))];
  }
}

const CASES = [
  ...MARCH_DTYPES.map((c) => ({ ...c, mixed: false })),
  // an int16 input joined into an int8 output, and an int8 one into an int16 output
  { march: 'bayes', dtype: 'qint8', mixed: true },
  { march: 'bayes', dtype: 'qint16', mixed: true },
] as const;

describe('integer export: FixedCat', () => {
  for (const { march, dtype, mixed } of CASES)
    test(`${march} ${dtype}${mixed ? ', one input of the other dtype' : ''}: each input requantized to the output scale as QTK does`, async () => {
      const other = dtype === 'qint8' ? 'qint16' : 'qint8';
      const calib = [
        uniformInput([1, 2, 4, 4], 1, -3, 3),
        uniformInput([1, 2, 4, 4], 2, -0.2, 0.2),
        uniformInput([1, 3, 4, 4], 3, -1, 1),
      ];
      const fixed = fixedPointOf(new Cat(), {
        march,
        dtype,
        calibration: [calib as never],
        ...(mixed ? { qconfig: { moduleName: { qy: getDefaultQatQconfig({ dtype: other }) } } } : {}),
      });
      expect(moduleKinds(fixed).filter((k) => k === 'FixedCat')).toHaveLength(2);
      expect((fixed.getSubmodule('qy') as Quantize).dtype).toBe(mixed ? other : dtype);
      // every integer of each input's range
      const ints = (n: number, seed: number, d: ObserverDType = dtype) => {
        const r = rangeInts(d, 256, seed);
        return Int32Array.from({ length: n * 256 }, (_, i) => r[i % 256]!);
      };
      const x = onGrid(fixed, 'qx', ints(2, 1), [1, 2, 16, 16]);
      const y = onGrid(fixed, 'qy', ints(2, 2, mixed ? other : dtype), [1, 2, 16, 16]);
      const z = onGrid(fixed, 'qz', ints(3, 3), [1, 3, 16, 16]);
      const { summary, comparison } = await exportAndCompare(fixed, [x, y, z]);
      expect(comparison.nodes.filter((n) => n.op === 'FixedCat')).toHaveLength(2);
      expect(summary).toBe(`all ${comparison.nodes.length} compared values identical`);
    });
});
