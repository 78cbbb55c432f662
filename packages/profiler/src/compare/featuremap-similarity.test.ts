import '@qtk/march-bayes';
import '@qtk/march-bernoulli2';
import type { QatModule } from '@qtk/core';
import { type FakeQuantize, namedFakeQuants, setFakeQuantize } from '@qtk/fake-quant';
import { describe, expect, it } from 'vitest';
import { alignNodes } from './align-nodes.js';
import { featuremapSimilarity } from './featuremap-similarity.js';
import { randomInputs, TinyResNet } from '@qtk/test-models';
import { stagesOf } from '../testing/stages.js';

const x = randomInputs(11, 4);

describe('featuremapSimilarity', () => {
  const { float, calibrated, fixed } = stagesOf(new TinyResNet(), 'bayes');

  it('pairs each fused node of the calibrated model with the last float node it absorbed', () => {
    const pairs = alignNodes(float, calibrated).map((p) => [p.first.name, p.name]);
    expect(pairs).toEqual([
      ['x', 'x'],
      ['quant', 'quant'],
      ['relu0', 'relu0'],
      ['relu1', '_generated_add_0'],
      ['conv2', 'conv2'],
      ['pool', 'pool'],
      ['flatten', 'flatten'],
      ['fc', 'fc'],
      ['dequant', 'dequant'],
    ]);
  });

  it('float vs calibrated: close at every node, the input quantization exact to within one step', () => {
    const r = featuremapSimilarity(float, calibrated, x);
    expect(r.nodes.map((n) => n.name)).toContain('_generated_add_0');
    for (const n of r.nodes) expect(n.cosine).toBeGreaterThan(0.99);
    const quant = r.nodes.find((n) => n.name === 'quant')!;
    expect(quant.maxDiffSteps).toBeLessThanOrEqual(0.5 + 1e-6);
    expect(quant.offByMoreThanOneStep).toBe(0);
    expect(r.flagged).toEqual([]);
  });

  it('calibrated vs fixed point: each node alone adds at most about one output step', () => {
    const r = featuremapSimilarity(calibrated, fixed, x);
    expect(r.nodes.map((n) => n.type)).toContain('FixedConv');
    for (const n of r.nodes) {
      if (n.sameInput?.maxDiffSteps == null) continue;
      expect(n.sameInput.maxDiffSteps, n.name).toBeLessThanOrEqual(1.01);
    }
    const out = r.nodes.find((n) => n.name === 'fc')!;
    expect(out.cosine).toBeGreaterThan(0.999);
  });

  it('a model compared with itself is identical everywhere (sqnr null: no noise)', () => {
    const r = featuremapSimilarity(fixed, fixed, x, { metric: 'sqnr' });
    for (const n of r.nodes) {
      expect(n.maxAbsDiff).toBe(0);
      expect(n.sqnr).toBeNull();
      expect(n.cosine).toBe(1);
    }
    expect(JSON.parse(JSON.stringify(r))).toEqual(r);
  });

  it('a layer with a tiny scale is the first flagged, and the same-input mode puts the error on it alone', () => {
    const broken = stagesOf(new TinyResNet(), 'bayes').calibrated;
    const fq = (broken.getSubmodule('relu0') as QatModule).activationPostProcess!;
    (fq.scale.values() as Float32Array).fill(1e-4);
    const r = featuremapSimilarity(float, broken, x);
    expect(r.flagged[0]).toBe('relu0');
    const relu0 = r.nodes.find((n) => n.name === 'relu0')!;
    const after = r.nodes.find((n) => n.name === '_generated_add_0')!;
    expect(relu0.cosine).toBeLessThan(0.9);
    expect(relu0.clipped).toBeGreaterThan(0.3);
    expect(r.nodes.find((n) => n.name === 'quant')!.clipped).toBe(0);
    expect(after.cosine).toBeLessThan(0.99);
    // the next node, fed the float model's inputs, is fine: its error is inherited
    expect(after.sameInput!.cosine).toBeGreaterThan(0.99);
  });

  it('leaves a calibrating model as it was: its fake-quants run as in VALIDATION and keep scale and state', () => {
    const s = stagesOf(new TinyResNet(), 'bayes');
    setFakeQuantize(s.calibrated, 'CALIBRATION');
    const before = namedFakeQuants(s.calibrated).map(([n, fq]) => [
      n,
      fq.fakeQuantState,
      [...(fq as FakeQuantize).scale.values()],
    ]);
    const r = featuremapSimilarity(s.float, s.calibrated, randomInputs(99, 4).mul(3));
    const after = namedFakeQuants(s.calibrated).map(([n, fq]) => [
      n,
      fq.fakeQuantState,
      [...(fq as FakeQuantize).scale.values()],
    ]);
    expect(after).toEqual(before);
    // quantized (VALIDATION), not passed through as CALIBRATION would: the input stub clips the ×3 input
    expect(r.nodes.find((n) => n.name === 'quant')!.clipped).toBeGreaterThan(0.1);
  });

  it('refuses an unknown metric and two unrelated models by name', () => {
    expect(() => featuremapSimilarity(float, calibrated, x, { metric: 'psnr' as never })).toThrow(
      /unknown metric 'psnr'/,
    );
  });
});
