import '@qtk/march-bayes';
import type { QatModule } from '@qtk/core';
import { describe, expect, it } from 'vitest';
import { NO_RUNTIME } from '../compare/first-divergence.js';
import { runModelProfiler } from './model-profiler.js';
import { randomInputs, TinyResNet } from '@qtk/test-models';
import { stagesOf } from '../testing/stages.js';

const x = randomInputs(11, 4);

describe('runModelProfiler', () => {
  it('QvsQ compares the calibrated model with its conversion and returns the report and results', async () => {
    const s = stagesOf(new TinyResNet(), 'bayes');
    const run = await runModelProfiler(s.calibrated, s.fixed, x, { mode: 'QvsQ' });
    expect(Object.keys(run).sort()).toEqual(['report', 'results']);
    const { results } = run;
    expect(results.compareWeights).toBeNull();
    expect(results.checkQconfig!.nodes.length).toBeGreaterThan(5);
    expect(results.featuremapSimilarity.nodes.find((n) => n.name === 'fc')!.cosine).toBeGreaterThan(0.999);
  });

  it('CvsQ compares a calibrated model with a QAT one: the weights a QAT step moved show in the weight table', async () => {
    const calibrated = stagesOf(new TinyResNet(), 'bayes').calibrated;
    const qat = stagesOf(new TinyResNet(), 'bayes').calibrated;
    // a "training step" by hand: flip the sign of one fc weight of the QAT model (within its quantization range)
    const fc = qat.getSubmodule('fc') as QatModule;
    const w = (fc.module as unknown as { weight: { values(): Float32Array } }).weight.values();
    const moved = Math.abs(2 * w[0]!);
    w[0] = -w[0]!;
    const { results } = await runModelProfiler(calibrated, qat, x, {
      mode: 'CvsQ',
      float: new TinyResNet(),
    });
    expect(results.featuremapSimilarity.nodes.find((n) => n.name === 'relu0')!.maxAbsDiff).toBe(0);
    expect(results.featuremapSimilarity.nodes.find((n) => n.name === 'fc')!.maxAbsDiff).toBeGreaterThan(0);
    const fcWeights = results.compareWeights!.layers.find((l) => l.name === 'fc')!;
    expect(fcWeights.maxAbsDiff).toBeGreaterThan(moved * 0.9);
    expect(fcWeights.maxAbsDiff).toBeLessThan(moved * 1.1 + 0.01);
  });

  it('refuses stages out of conversion order, naming the mode', async () => {
    const s = stagesOf(new TinyResNet(), 'bayes');
    await expect(runModelProfiler(s.fixed, s.calibrated, x, { mode: 'QvsQ' })).rejects.toThrow(
      /mode 'QvsQ' compares a QAT model with a fixed point one, got fixed-point vs qat/,
    );
    await expect(runModelProfiler(s.float, s.calibrated, x, { mode: 'XvsY' as never })).rejects.toThrow(
      /mode must be 'FvsQ', 'CvsQ' or 'QvsQ'/,
    );
  });

  it('without a runtime comparison, the first divergence skips onnxruntime and the report says why', async () => {
    const s = stagesOf(new TinyResNet(), 'bayes');
    const { report, results } = await runModelProfiler(s.calibrated, s.fixed, x, {
      mode: 'QvsQ',
      stages: { fakeQuant: s.calibrated, fixed: s.fixed },
    });
    expect(results.firstDivergence!.pairs.at(-1)).toMatchObject({ to: 'onnxruntime', node: null, skipped: NO_RUNTIME });
    expect(report.summary.some((n) => n.text.includes(NO_RUNTIME))).toBe(true);
  });
});
