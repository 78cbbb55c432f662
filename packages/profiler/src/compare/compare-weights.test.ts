import '@qtk/march-bayes';
import type { QatModule } from '@qtk/core';
import { absorbBatchNorm, fuseFx } from '@qtk/fusion';
import { subAt, symbolicTrace } from '@qtk/ir';
import { type BatchNorm2d, Conv2d, Module } from '@qtk/nn';
import type { Tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { compareWeights } from './compare-weights.js';
import { TinyResNet } from '@qtk/test-models';
import { stagesOf } from '../testing/stages.js';

describe('compareWeights', () => {
  const { float, calibrated, fixed } = stagesOf(new TinyResNet(), 'bayes');

  it('float vs calibrated: every weighted layer, BN folded into the float conv, int8 per-channel min-max close and unclipped', () => {
    const r = compareWeights(float, calibrated);
    expect(r.version).toBe(1);
    expect(r.unmatched).toEqual([]);
    expect(r.layers.map((l) => [l.name, l.floatLayer, l.foldedBatchNorm])).toEqual([
      ['relu0', 'conv0', 'bn0'],
      ['_generated_add_0', 'conv1', 'bn1'],
      ['conv2', 'conv2', null],
      ['fc', 'fc', null],
    ]);
    for (const l of r.layers) {
      expect(l.cosine, l.name).toBeGreaterThan(0.999);
      expect(l.clipped).toBe(0);
      expect(l.dtype).toBe('qint8');
      expect(l.axis).toBe(0);
      expect(l.scaleSource).toBe('fake-quant');
      expect(l.maxDiffSteps).toBeLessThanOrEqual(0.5 + 1e-5);
      expect(l.sqnr).toBeGreaterThan(30);
    }
    expect(r.layers[0]!.scale).toHaveLength(8);
    expect(r.layers[2]!.shape).toEqual([16, 8, 1, 1]);
  });

  it('the quantized weight is exactly what the weight fake-quant computes from the folded float weight', () => {
    const r = compareWeights(float, calibrated);
    const qat = subAt(calibrated, 'relu0') as QatModule;
    const { weight } = absorbBatchNorm(subAt(float, 'conv0') as Conv2d, subAt(float, 'bn0') as BatchNorm2d);
    const wq = qat.weightFakeQuant!.call(weight).values(); // VALIDATION state: no observer update
    const w = weight.values();
    let max = 0;
    for (let i = 0; i < w.length; i++) max = Math.max(max, Math.abs(w[i]! - wq[i]!));
    expect(r.layers[0]!.maxAbsDiff).toBe(max);
    expect(r.layers[0]!.scale).toEqual(Array.from(qat.weightFakeQuant!.scale.values()));
  });

  it('a float model fused first gives the same comparison with nothing left to fold', () => {
    const fused = fuseFx(float, { march: 'bayes' });
    const a = compareWeights(float, calibrated);
    const b = compareWeights(fused, calibrated);
    expect(b.layers.map((l) => l.foldedBatchNorm)).toEqual([null, null, null, null]);
    expect(b.layers.map((l) => l.floatLayer)).toEqual(['relu0.conv', '_generated_add_0.conv', 'conv2', 'fc']);
    expect(b.layers.map((l) => l.maxAbsDiff)).toEqual(a.layers.map((l) => l.maxAbsDiff));
  });

  it('a weight scale shrunk 100 times clips most weights and breaks the similarity', () => {
    const s = stagesOf(new TinyResNet(), 'bayes');
    const fq = (subAt(s.calibrated, 'conv2') as QatModule).weightFakeQuant!;
    const scale = fq.scale.values() as Float32Array;
    scale.set(scale.map((v) => v / 100));
    const l = compareWeights(s.float, s.calibrated).layers.find((x) => x.name === 'conv2')!;
    expect(l.clipped).toBeGreaterThan(0.5);
    expect(l.clippedCount).toBe(Math.round(l.clipped * 128));
    expect(l.maxDiffSteps).toBeGreaterThan(1);
    expect(l.sqnr).toBeLessThan(10);
  });

  it('fixed point: the integers times the scales derived from the plan match the fake-quant comparison', () => {
    const q = compareWeights(float, calibrated);
    const f = compareWeights(float, fixed);
    expect(f.unmatched).toEqual([]);
    expect(f.layers.map((l) => l.name)).toEqual(q.layers.map((l) => l.name));
    for (const [i, l] of f.layers.entries()) {
      const ref = q.layers[i]!;
      expect(l.type).toBe('FixedConv');
      expect(l.scaleSource).toBe('fixed-point');
      expect(l.foldedBatchNorm).toBe(ref.foldedBatchNorm);
      expect(l.clipped).toBe(0);
      expect(l.cosine).toBeCloseTo(ref.cosine, 6);
      for (const [c, s] of l.scale.entries())
        expect(Math.abs(s / ref.scale[c]! - 1), `${l.name}[${c}]`).toBeLessThan(1e-4);
    }
    // fc has a high-precision output: its accumulator scale is stored, so its weight scale is exact to float32
    const fc = f.layers.find((l) => l.name === 'fc')!;
    const refFc = q.layers.find((l) => l.name === 'fc')!;
    for (const [c, s] of fc.scale.entries()) expect(s).toBeCloseTo(refFc.scale[c]!, 9);
    expect(JSON.parse(JSON.stringify(f))).toEqual(f);
  });

  it('lists the quantized layers without a float counterpart of the same shape, and why', () => {
    class Other extends Module {
      readonly conv2 = new Conv2d(8, 4, 1);
      forward(t: Tensor): Tensor {
        return this.conv2.call(t);
      }
    }
    const r = compareWeights(symbolicTrace(new Other()), calibrated);
    expect(r.layers).toEqual([]);
    expect(r.unmatched.map((u) => u.name)).toEqual(['relu0', '_generated_add_0', 'conv2', 'fc']);
    expect(r.unmatched[2]!.reason).toMatch(/'conv2' has 32 values, the quantized one \[16,8,1,1\]/);
    expect(r.unmatched[0]!.reason).toMatch(/no weighted layer/);
  });

  it('cannot derive a fixed-point weight scale without an input scale, and says what to do', () => {
    const s = stagesOf(new TinyResNet(), 'bayes');
    const conv2 = s.fixed.graph.nodes.find((n) => n.name === 'conv2')!;
    const input = s.fixed.graph.nodes.find((n) => n.op === 'placeholder')!;
    conv2.args = [input];
    expect(() => compareWeights(s.float, s.fixed)).toThrow(/input scale of the fixed-point layer 'conv2'.*calibrated/);
  });
});
