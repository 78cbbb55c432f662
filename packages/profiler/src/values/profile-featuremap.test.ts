import '@qtk/march-bayes';
import type { QatModule } from '@qtk/core';
import { subAt } from '@qtk/ir';
import { tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { profileFeaturemap } from './profile-featuremap.js';
import { getRawFeatures } from './raw-features.js';
import { randomInputs, TinyResNet } from '@qtk/test-models';
import { stagesOf } from '../testing/stages.js';

const x = randomInputs(11, 4);

describe('profileFeaturemap', () => {
  it('puts the layer with a shrunk scale first by saturation and lists every node by range, widest first', () => {
    const { calibrated } = stagesOf(new TinyResNet(), 'bayes');
    ((subAt(calibrated, 'conv2') as QatModule).activationPostProcess!.scale.values() as Float32Array).fill(1e-4);
    const p = profileFeaturemap(calibrated, x);
    expect(p.version).toBe(1);
    expect(p.nodes).toEqual(getRawFeatures(calibrated, x).nodes);
    const first = p.summary.bySaturation[0]!;
    expect(first.name).toBe('conv2');
    expect(first.saturation).toBeGreaterThan(0.5);
    const sats = p.summary.bySaturation.map((e) => e.saturation);
    expect(sats).toEqual([...sats].sort((a, b) => b - a));
    expect(p.summary.byRange).toHaveLength(p.nodes.length);
    const ranges = p.summary.byRange.map((e) => e.range);
    expect(ranges).toEqual([...ranges].sort((a, b) => b - a));
    const widest = p.nodes.find((n) => n.name === p.summary.byRange[0]!.name)!;
    expect(p.summary.byRange[0]!.range).toBe(widest.max! - widest.min!);
    expect(p.summary.nonFinite).toEqual([]);
    expect(JSON.parse(JSON.stringify(p))).toEqual(p);
  });

  it('lists outlier and NaN nodes', () => {
    const { float } = stagesOf(new TinyResNet(), 'bayes');
    const v = Float32Array.from(x.values());
    v[3] = 60;
    const spiked = profileFeaturemap(float, tensor(v, [...x.shape]));
    expect(spiked.summary.outliers[0]!.name).toBe('x');
    expect(spiked.summary.outliers[0]!.ratio).toBeGreaterThan(50);
    v[4] = Number.NaN;
    const broken = profileFeaturemap(float, tensor(v, [...x.shape]));
    expect(broken.summary.nonFinite[0]).toEqual({ name: 'x', count: 1 });
    // a NaN input poisons every later node
    expect(broken.summary.nonFinite.map((e) => e.name)).toContain('fc');
  });
});
