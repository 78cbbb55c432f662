import { FixedAdd, type Quantize } from '@qtk/fixed-point';
import { DeQuantStub, FloatFunctional } from '@qtk/nn';
import { add, cat, sub, type Tensor } from '@qtk/tensor';
import { getDefaultQatQconfig } from '@qtk/fake-quant';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { expectOnnxCheckerPasses } from '../../../../scripts/onnx-checker.js';
import { everyPairInputs, pairGridInputs, ThreeInputNet } from '../testing/three-input-net.js';
import { exportAndCompare, fixedPointOf, uniformInput } from '../testing/fixed-models.js';
import { MARCH_DTYPES, moduleKinds, rangeInts } from '../testing/integer-inputs.js';

/** add / sub of two tensors both ways, with scalars on either side, x ± 0, and broadcasting. */
class AddSub extends ThreeInputNet {
  readonly add = new FloatFunctional();
  readonly sub = new FloatFunctional();
  readonly rsub = new FloatFunctional();
  readonly addScalar = new FloatFunctional();
  readonly dequant = new DeQuantStub();
  protected compute(a: Tensor, b: Tensor, c: Tensor): Tensor {
    // c is [1, 1, 1, W]: it broadcasts over the rows
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

/** Calibration where y ≈ -x/10: the sums' range is narrower than the operands', so the grid saturates them. */
function calibration(): Tensor[] {
  const cx = uniformInput([1, 1, 16, 16], 1, -3, 3);
  const cy = uniformInput([1, 1, 16, 16], 2, -0.05, 0.05);
  cy.values().forEach((v, i, arr) => {
    arr[i] = v - cx.values()[i]! / 10;
  });
  return [cx, cy, uniformInput([1, 1, 1, 16], 3, -1, 1)];
}

const dir = mkdtempSync(join(tmpdir(), 'qtk-int-add-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('integer export: FixedAdd', () => {
  for (const { march, dtype } of MARCH_DTYPES)
    test(`${march} ${dtype}: every pair of operand integers gives QTK's sum in onnxruntime`, async () => {
      const fixed = fixedPointOf(new AddSub(), { march, dtype, calibration: [calibration() as never] });
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
      const inputs = everyPairInputs(fixed, dtype);
      const { summary, comparison } = await exportAndCompare(fixed, inputs);
      expect(comparison.nodes.filter((n) => n.op === 'FixedAdd')).toHaveLength(9);
      expect(summary).toBe(`all ${comparison.nodes.length} compared values identical`);
    });

  test('bayes, an int16 y next to an int8 x: the shift limits of both dtypes; onnx.checker passes', async (ctx) => {
    const fixed = fixedPointOf(new AddSub(), {
      march: 'bayes',
      qconfig: { moduleName: { qy: getDefaultQatQconfig({ dtype: 'qint16' }) } },
      calibration: [calibration() as never],
    });
    const adds = fixed.graph.nodes
      .filter((n) => n.op === 'call_module')
      .map((n) => fixed.getSubmodule(n.target))
      .filter((m): m is FixedAdd => m instanceof FixedAdd);
    expect(adds).toHaveLength(9);
    expect((fixed.getSubmodule('qy') as Quantize).dtype).toBe('qint16');
    expect((fixed.getSubmodule('qx') as Quantize).dtype).toBe('qint8');
    const inputs = pairGridInputs(fixed, rangeInts('qint8', 256), rangeInts('qint16', 256, 6), rangeInts('qint8', 256));
    const { bytes, summary, comparison } = await exportAndCompare(fixed, inputs);
    expect(summary).toBe(`all ${comparison.nodes.length} compared values identical`);
    const path = join(dir, 'add.onnx');
    writeFileSync(path, bytes);
    await expectOnnxCheckerPasses(ctx, path);
  });
});
