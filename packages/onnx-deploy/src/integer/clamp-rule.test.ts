import { FixedClamp, planRequantizeInt16, planRequantizeWide, type Quantize } from '@qtk/fixed-point';
import { DeQuantStub, Module, QuantStub } from '@qtk/nn';
import { abs, cat, clamp, type Tensor } from '@qtk/tensor';
import { describe, expect, test } from 'vitest';
import { exportAndCompare, fixedPointOf, uniformInput } from '../testing/fixed-models.js';
import { moduleKinds, onGrid, rangeInts } from '../testing/integer-inputs.js';

/** clamp with both bounds, one bound, bounds beyond the dtype's range, crossed bounds; abs. */
class Clamp extends Module {
  readonly quant = new QuantStub();
  readonly dequant = new DeQuantStub();
  forward(x: Tensor): Tensor {
    const q = this.quant.call(x);
    const outs = [
      clamp(q, -0.5, 1),
      clamp(q, 0.25),
      clamp(q, null, -0.1),
      clamp(q, -1e6, 1e6),
      clamp(q, 1, -0.5),
      abs(q),
    ];
    return this.dequant.call(cat(outs, 1));
  }
}

/** One clamp between the stubs, for a clamp with its own output requantize. */
class OneClamp extends Module {
  readonly quant = new QuantStub();
  readonly dequant = new DeQuantStub();
  forward(x: Tensor): Tensor {
    return this.dequant.call(clamp(this.quant.call(x), -0.5, 1));
  }
}

// Clip / Abs are in bayes's capability table only.
describe('integer export: FixedClamp', () => {
  for (const dtype of ['qint8', 'qint16'] as const)
    test(`bayes ${dtype}: bounds rounded on the input grid and saturation as QTK`, async () => {
      const fixed = fixedPointOf(new Clamp(), {
        march: 'bayes',
        dtype,
        calibration: [uniformInput([1, 1, 16, 16], 1, -2, 2)],
      });
      expect(moduleKinds(fixed).filter((k) => k === 'FixedClamp')).toHaveLength(6);
      // every integer of the range (abs(-128) saturates to 127 in int8)
      const x = onGrid(fixed, 'quant', rangeInts(dtype, 256, 3), [1, 1, 16, 16]);
      const { summary, comparison } = await exportAndCompare(fixed, x);
      expect(comparison.nodes.filter((n) => n.op === 'FixedClamp')).toHaveLength(6);
      expect(summary).toBe(`all ${comparison.nodes.length} compared values identical`);
    });

  // prepare gives clamp no output fake-quant; a qconfig may, and then the module requantizes to it.
  // The converted module is replaced by one with such a requantize (both planners, both dtypes).
  const requantized = [
    { rule: 'wide', planner: planRequantizeWide, rounding: 'half_up', outDtype: 'qint16' },
    { rule: 'int16_intermediate', planner: planRequantizeInt16, rounding: 'half_even', outDtype: 'qint8' },
  ] as const;
  for (const { rule, planner, rounding, outDtype } of requantized)
    test(`clamp with an output requantize (${rule} plan, ${rounding} bounds, ${outDtype} out)`, async () => {
      const fixed = fixedPointOf(new OneClamp(), {
        march: 'bayes',
        calibration: [uniformInput([1, 1, 16, 16], 1, -2, 2)],
      });
      const node = fixed.graph.nodes.find(
        (n) => n.op === 'call_module' && fixed.getSubmodule(n.target) instanceof FixedClamp,
      )!;
      const sIn = (fixed.getSubmodule('quant') as Quantize).scale;
      const sOut = Math.fround(sIn * 0.37);
      fixed.setSubmodule(node.target, new FixedClamp('clamp', rounding, planner(sIn, sOut, outDtype), sOut));
      const x = onGrid(fixed, 'quant', rangeInts('qint8', 256, 3), [1, 1, 16, 16]);
      const { summary, comparison } = await exportAndCompare(fixed, x);
      const c = comparison.nodes.find((n) => n.op === 'FixedClamp')!;
      expect(c.dtype).toBe(outDtype);
      expect(summary).toBe(`all ${comparison.nodes.length} compared values identical`);
    });
});
