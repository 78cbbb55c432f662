import { FixedAdd } from '@qtk/fixed-point';
import { DeQuantStub, FloatFunctional, Module, QuantStub } from '@qtk/nn';
import { add, cat, sub, type Tensor } from '@qtk/tensor';
import { describe, expect, test } from 'vitest';
import { exportAndCompare, fixedPointOf, uniformInput } from '../testing/fixed-models.js';
import { MARCH_DTYPES, moduleKinds, onGrid, pairGrid, rangeInts } from '../testing/integer-inputs.js';

/** add / sub of two tensors both ways, with scalars on either side, x ± 0, and broadcasting. */
class AddSub extends Module {
  readonly qx = new QuantStub();
  readonly qy = new QuantStub();
  readonly qz = new QuantStub();
  readonly add = new FloatFunctional();
  readonly sub = new FloatFunctional();
  readonly rsub = new FloatFunctional();
  readonly addScalar = new FloatFunctional();
  readonly dequant = new DeQuantStub();
  forward(x: Tensor, y: Tensor, z: Tensor): Tensor {
    const a = this.qx.call(x);
    const b = this.qy.call(y);
    const c = this.qz.call(z); // [1, 1, 1, W]: broadcasts over the rows
    const outs = [
      this.add.add(a, b),
      this.sub.sub(a, b),
      this.rsub.sub(b, a),
      this.addScalar.addScalar(a, 0.75),
      add(2, b),
      sub(a, 0),
      sub(0, b),
      add(a, c),
      sub(c, b),
    ];
    return this.dequant.call(cat(outs, 1));
  }
}

describe('integer export: FixedAdd', () => {
  for (const { march, dtype } of MARCH_DTYPES)
    test(`${march} ${dtype}: every pair of operand integers gives QTK's sum in onnxruntime`, async () => {
      // y ≈ -x/10 in calibration: the sums' range is narrower than the operands', so the grid saturates them
      const cx = uniformInput([1, 1, 16, 16], 1, -3, 3);
      const cy = uniformInput([1, 1, 16, 16], 2, -0.05, 0.05);
      cy.values().forEach((v, i, arr) => {
        arr[i] = v - cx.values()[i]! / 10;
      });
      const cz = uniformInput([1, 1, 1, 16], 3, -1, 1);
      const fixed = fixedPointOf(new AddSub(), { march, dtype, calibration: [[cx, cy, cz] as never] });
      const kinds = moduleKinds(fixed);
      expect(kinds.filter((k) => k === 'FixedAdd')).toHaveLength(9);
      expect(kinds).toContain('FixedCat');
      const adds = fixed.graph.nodes
        .filter((n) => n.op === 'call_module')
        .map((n) => fixed.getSubmodule(n.target))
        .filter((m): m is FixedAdd => m instanceof FixedAdd);
      // the march's accumulator: bayes shifts the larger-scale operand, bernoulli2 saturates an int32 conv sum
      expect(adds.some((m) => m.config.plan.saturate32)).toBe(march === 'bernoulli2');
      // every int8 pair, or 256 × 256 int16 values spanning the range (ends included)
      const { rows, cols } = pairGrid(rangeInts(dtype, 256, 5), rangeInts(dtype, 256, 6));
      const x = onGrid(fixed, 'qx', rows, [1, 1, 256, 256]);
      const y = onGrid(fixed, 'qy', cols, [1, 1, 256, 256]);
      const z = onGrid(fixed, 'qz', rangeInts(dtype, 256, 7), [1, 1, 1, 256]);
      const { summary, comparison } = await exportAndCompare(fixed, [x, y, z]);
      expect(comparison.nodes.filter((n) => n.op === 'FixedAdd')).toHaveLength(9);
      expect(summary).toBe(`all ${comparison.nodes.length} compared values identical`);
    });
});
