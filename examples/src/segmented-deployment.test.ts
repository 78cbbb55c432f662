import { modelFromBytes, modelToBytes } from '@qtk/core';
import { QTensor } from '@qtk/fixed-point';
import { type GraphModule, runSegments, splitModel } from '@qtk/ir';
import '@qtk/march-bayes';
import '@qtk/march-bernoulli2';
import { QuantStub } from '@qtk/nn';
import { Generator, noGrad, rand, type Tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { postTrainingQuantize } from './ptq.js';
import { ReferenceNet } from './reference-net.js';

/**
 * The reference network with a QuantStub where its second stage starts (horizon_plugin_pytorch's
 * segmented-deployment recipe): with an observed scale it sees what layer2's output saw (the
 * integers pass through), with a fixed one it requantizes them.
 */
class TwoStageNet extends ReferenceNet {
  readonly stage2: QuantStub;
  constructor(generator: Generator, stage2Scale?: number) {
    super({ generator });
    this.stage2 = new QuantStub(stage2Scale === undefined ? {} : { scale: stage2Scale });
  }
  override forward(x: Tensor): Tensor {
    let y = this.stem.call(this.quant.call(x));
    y = this.stage2.call(this.layer2.call(this.layer1.call(y)));
    y = this.flatten.call(this.pool.call(this.layer3.call(y)));
    return this.dequant.call(this.fc.call(y));
  }
}

const images = (n: number, seed: number): Tensor[] => {
  const g = new Generator(seed);
  return Array.from({ length: n }, () => rand([4, 1, 28, 28], { generator: g }).mul(2).sub(1));
};

/**
 * Cut inside layer1 (its shortcut, stem_2, crosses the cut), after layer2 (the next segment starts
 * with the stage2 QuantStub) and inside layer3 (its shortcut, stage2's output, crosses).
 */
const CUTS = ['layer1_relu1', 'layer2__generated_add_0', 'layer3_relu1'];

const bits = (t: unknown) => Array.from((t as Tensor).values());
const call = (m: GraphModule, ...a: unknown[]) =>
  noGrad(() => (m as unknown as { call(...v: unknown[]): unknown }).call(...a));

describe('segmented deployment of the reference network (splitModel)', () => {
  for (const [march, stage2Scale] of [
    ['bayes', undefined],
    ['bernoulli2', 0.05],
  ] as const) {
    it(`${march}, stage2 ${stage2Scale ? 'requantizing' : 'passing through'}: the fixed-point segments chained equal the whole fixed-point model bit for bit, also after saving each as a model file`, () => {
      const float = new TwoStageNet(new Generator(2), stage2Scale);
      const { calibrated, fixedPoint } = postTrainingQuantize(float, { march, calibration: images(2, 1) });
      const stub = fixedPoint.getSubmodule('stage2') as unknown as { output: { scale: number } | null };
      expect(stub.output?.scale ?? null).toBe(stage2Scale === undefined ? null : Math.fround(stage2Scale));
      const segments = splitModel(fixedPoint, { at: CUTS });
      expect(segments.map((s) => s.inputNames)).toEqual([
        ['x'],
        ['layer1_relu1', 'stem_2'],
        ['layer2__generated_add_0'],
        ['layer3_relu1', 'stage2'],
      ]);
      const reloaded = segments.map((s) => modelFromBytes(modelToBytes(s)));
      for (const [k, r] of reloaded.entries()) {
        expect(r.kind).toBe('fixed-point');
        expect(r.march).toBe(march);
        expect(r.model.meta.segment).toEqual(segments[k]!.meta.segment);
      }
      for (const x of images(3, 7)) {
        const want = bits(call(fixedPoint, x));
        // the values handed over inside the quantized region are integers with their scales
        const handed = call(segments[0]!, x) as unknown[];
        expect(handed).toHaveLength(2);
        for (const v of handed) {
          expect(v).toBeInstanceOf(QTensor);
          expect((v as QTensor).dtype).toBe('qint8');
        }
        expect(bits(runSegments(segments, [x]))).toEqual(want);
        expect(
          bits(
            runSegments(
              reloaded.map((r) => r.model),
              [x],
            ),
          ),
        ).toEqual(want);
      }
      // the calibrated (fake-quant) model splits at the same names and chains exactly too
      const qatSegments = splitModel(calibrated, { at: CUTS });
      for (const x of images(2, 8)) {
        expect(bits(noGrad(() => runSegments(qatSegments, [x])))).toEqual(bits(call(calibrated, x)));
      }
      expect(qatSegments[3]!.meta).toMatchObject({ kind: 'qat', march });
      const qatReloaded = modelFromBytes(modelToBytes(qatSegments[1]!));
      expect(qatReloaded.kind).toBe('qat');
      const [a, b] = call(qatSegments[0]!, images(1, 9)[0]!) as Tensor[];
      expect(bits(call(qatReloaded.model, a, b))).toEqual(bits(call(qatSegments[1]!, a, b)));
    });
  }
});
