import '../index.js'; // the QDQ and integer export rules
import { DeQuantStub, FloatFunctional, Module, PixelShuffle, PixelUnshuffle, QuantStub, Upsample } from '@qtk/nn';
import {
  abs,
  clamp,
  expand,
  flatten,
  ge,
  interpolate,
  maximum,
  maxPool2d,
  mul,
  pad,
  slice,
  split,
  sub,
  type Tensor,
} from '@qtk/tensor';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { formatRuntimeComparison } from '../compare-runtime.js';
import { compareWithRuntime } from '../node/compare-with-runtime.js';
import { exportOnnxBytes } from '@qtk/onnx';
import { fixedPointOf, uniformInput } from '../testing/fixed-models.js';
import { moduleKinds } from '../testing/integer-inputs.js';
import { expectOnnxCheckerPasses } from '../../../../scripts/onnx-checker.js';

/** Value ops feeding elementwise ops feeding reductions; quantized values as graph outputs too. */
class Chain extends Module {
  readonly qx = new QuantStub();
  readonly qy = new QuantStub();
  readonly shuffle = new PixelShuffle(2);
  readonly unshuffle = new PixelUnshuffle(2);
  readonly up = new Upsample({ scaleFactor: 2, mode: 'nearest' });
  readonly add = new FloatFunctional();
  readonly sum = new FloatFunctional();
  readonly mean = new FloatFunctional();
  readonly dequant = new DeQuantStub();
  readonly dequant2 = new DeQuantStub();
  constructor(readonly bayesOnly: boolean) {
    super();
  }
  forward(x: Tensor, y: Tensor): Tensor[] {
    const q = this.qx.call(x);
    const r = this.qy.call(y);
    const [a, b] = split(q, [4, 4], 1);
    const padded = pad(b!, [1, 1, 2, 0]);
    // bernoulli2's table has neither SpaceToDepth nor Expand
    const c = maxPool2d(this.shuffle.call(this.bayesOnly ? this.unshuffle.call(padded) : padded), 2, {
      stride: 1,
      padding: 1,
    });
    const e = interpolate(this.up.call(a!), { scaleFactor: 0.75, mode: 'nearest' });
    const h = this.add.add(a!, r);
    let i = mul(sub(h, 0.5), r);
    if (this.bayesOnly) i = clamp(abs(maximum(i, -0.2)), 0.1, 0.9);
    const summed = this.sum.sum(i, [2, 3], true);
    const l = this.mean.mean(this.bayesOnly ? expand(summed, [-1, -1, 2, 2]) : summed, 1);
    const outs = [this.dequant.call(flatten(c, 1)), this.dequant2.call(l), e];
    return this.bayesOnly ? [...outs, slice(e, { axis: 2, start: 1, step: 3 }), ge(h, r) as never] : outs;
  }
}

const dir = mkdtempSync(join(tmpdir(), 'qtk-int-chain-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('integer export: a chain of value and elementwise ops', () => {
  const cases = [
    { march: 'bayes', dtype: 'qint8', opsets: [11, 13, 17, 21] },
    { march: 'bayes', dtype: 'qint16', opsets: [11, 13, 17, 21] },
    { march: 'bernoulli2', dtype: 'qint8', opsets: [11, 13, 17, 21] },
  ] as const;
  for (const { march, dtype, opsets } of cases)
    for (const opset of opsets)
      test(`${march} ${dtype}, opset ${opset}: exported with batch 2, identical in onnxruntime on batch 3`, async (ctx) => {
        const bayes = march === 'bayes';
        const calib = [uniformInput([2, 8, 6, 6], 1), uniformInput([2, 4, 6, 6], 2)];
        const fixed = fixedPointOf(new Chain(bayes), { march, dtype, calibration: [calib as never] });
        const kinds = new Set(moduleKinds(fixed));
        for (const k of ['FixedValueOp', 'FixedAdd', 'FixedMul', 'FixedReduce']) expect(kinds).toContain(k);
        if (bayes) for (const k of ['FixedMinMax', 'FixedClamp', 'FixedCompare']) expect(kinds).toContain(k);
        // the batch is dynamic: shape constants copy or broadcast it, index tables do not depend on it
        const bytes = exportOnnxBytes(fixed, calib, { opset });
        const inputs = [uniformInput([3, 8, 6, 6], 3, -2, 2), uniformInput([3, 4, 6, 6], 4, -2, 2)];
        const comparison = await compareWithRuntime(fixed, bytes, inputs);
        expect(comparison.nodes.length).toBeGreaterThan(15);
        expect(formatRuntimeComparison(comparison)).toBe(`all ${comparison.nodes.length} compared values identical`);
        if (opset <= 17) {
          // the python onnx package here knows opsets up to 17
          const path = join(dir, `chain-${march}-${dtype}-${opset}.onnx`);
          writeFileSync(path, bytes);
          await expectOnnxCheckerPasses(ctx, path);
        }
      });
});
