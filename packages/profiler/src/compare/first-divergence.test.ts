import '@qtk/march-bayes';
import '@qtk/march-bernoulli2';
import type { QatModule } from '@qtk/core';
import { exportOnnxBytes } from '@qtk/onnx';
import { describe, expect, it } from 'vitest';
import { firstDivergence, NO_RUNTIME } from './first-divergence.js';
import { firstDivergence as firstDivergenceWithOrt } from '../node/first-divergence.js';
import { randomInputs, TinyResNet } from '@qtk/test-models';
import { stagesOf } from '../testing/stages.js';

const x = randomInputs(11, 4);

const stages = (march = 'bayes') => {
  const s = stagesOf(new TinyResNet(), march);
  return { float: s.float, fakeQuant: s.calibrated, fixed: s.fixed };
};

/** Sets the output scale of a calibrated module's fake-quant (a deliberately broken layer). */
const setScale = (gm: ReturnType<typeof stages>['fakeQuant'], path: string, scale: number) => {
  const fq = (gm.getSubmodule(path) as QatModule).activationPostProcess!;
  (fq.scale.values() as Float32Array).fill(scale);
};

describe('firstDivergence', () => {
  it('a healthy model: no stage pair diverges, and onnxruntime reproduces every node', async () => {
    const r = await firstDivergenceWithOrt(stages(), x);
    expect(r.first).toBeNull();
    expect(r.pairs.map((p) => [p.from, p.to, p.node])).toEqual([
      ['float', 'fakeQuant', null],
      ['fakeQuant', 'fixed', null],
      ['fixed', 'onnxruntime', null],
    ]);
    expect(r.pairs[2]!.runtime!.compared).toBeGreaterThan(5);
    expect(r.pairs[2]!.runtime!.mismatches).toBe(0);
    expect(JSON.parse(JSON.stringify(r))).toEqual(r);
  });

  it('a tiny fixed scale: the layer is found first, between float and fake quant, as saturation', async () => {
    const s = stages();
    setScale(s.fakeQuant, 'relu0', 1e-4);
    const r = await firstDivergence(s, x, { onnx: null });
    expect(r.first).toEqual({ from: 'float', to: 'fakeQuant', node: 'relu0' });
    expect(r.pairs[0]!.diagnosis!.cause).toBe('saturation');
    expect(r.pairs[0]!.diagnosis!.evidence!.clipped).toBeGreaterThan(0.3);
  });

  it('a scale far larger than the data: scale-too-coarse, naming the share of the range used', async () => {
    const s = stages();
    const fq = (s.fakeQuant.getSubmodule('relu0') as QatModule).activationPostProcess!;
    setScale(s.fakeQuant, 'relu0', fq.calculateQparams().scale[0]! * 40);
    const r = await firstDivergence(s, x, { onnx: null });
    expect(r.first?.node).toBe('relu0');
    expect(r.pairs[0]!.diagnosis!.cause).toBe('scale-too-coarse');
    expect(r.pairs[0]!.diagnosis!.evidence!.usedRange).toBeLessThan(0.05);
  });

  it('a fixed-point weight changed after export: fake quant and fixed agree within steps, onnxruntime parts at that conv', async () => {
    const s = stages();
    const bytes = exportOnnxBytes(s.fixed, [x]);
    const conv = s.fixed.getSubmodule('conv2') as unknown as { config: { weight: { values(): Int8Array } } };
    const w = conv.config.weight.values();
    w[0] = w[0]! > 0 ? w[0]! - 1 : w[0]! + 1;
    const r = await firstDivergenceWithOrt(s, x, { onnx: bytes });
    expect(r.pairs[1]!.node).toBeNull();
    expect(r.first).toEqual({ from: 'fixed', to: 'onnxruntime', node: 'conv2' });
    expect(r.pairs[2]!.runtime!.mismatches).toBeGreaterThan(0);
  });

  it('without a runtime comparison (the main entry, as in a browser), the onnxruntime pair is skipped saying why', async () => {
    const r = await firstDivergence(stages(), x);
    expect(r.pairs.map((p) => [p.from, p.to, p.node])).toEqual([
      ['float', 'fakeQuant', null],
      ['fakeQuant', 'fixed', null],
      ['fixed', 'onnxruntime', null],
    ]);
    expect(r.pairs[2]!.skipped).toBe(NO_RUNTIME);
    expect(r.pairs[2]!.runtime).toBeUndefined();
  });

  it('without a float model the walk starts at fake quant', async () => {
    const { fakeQuant, fixed } = stages();
    const r = await firstDivergence({ fakeQuant, fixed }, x, { onnx: null });
    expect(r.pairs.map((p) => [p.from, p.to])).toEqual([
      ['fakeQuant', 'fixed'],
      ['fixed', 'onnxruntime'],
    ]);
    expect(r.first).toBeNull();
  });

  it('refuses a threshold outside (0, 1]', async () => {
    await expect(firstDivergence(stages(), x, { threshold: 1.5 })).rejects.toThrow(/threshold must be in \(0, 1\]/);
  });
});
