import '@qtk/march-bayes';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { QatModule } from '@qtk/core';
import { describe, expect, it } from 'vitest';
import { modelProfiler } from './model-profiler.js';
import { randomInputs, stagesOf, TinyResNet } from './testing/models.js';

const x = randomInputs(11, 4);

describe('modelProfiler', () => {
  it('FvsQ with a broken layer: every tool written, the report leads with the first divergence at that layer', async () => {
    const s = stagesOf(new TinyResNet(), 'bayes');
    (s.calibrated.getSubmodule('relu0') as QatModule).activationPostProcess!.scale.values().fill(1e-4);
    const outDir = join(mkdtempSync(join(tmpdir(), 'qtk-profiler-')), 'report');
    const steps: string[] = [];
    const { report, results, written } = await modelProfiler(s.float, s.calibrated, x, {
      mode: 'FvsQ',
      outDir,
      stages: { float: s.float, fakeQuant: s.calibrated, fixed: s.fixed },
      onProgress: (tool) => steps.push(tool),
    });
    expect(steps).toHaveLength(9);
    expect(results.firstDivergence!.first).toEqual({ from: 'float', to: 'fakeQuant', node: 'relu0' });
    expect(report.summary[0]!.severity).toBe('error');
    expect(report.summary[0]!.text).toMatch(/^float → fake quant: first diverges at relu0 .*saturation/);
    expect(report.summary.some((n) => /clips .* relu0 \d/.test(n.text))).toBe(true);
    expect(report.tables.map((t) => t.id)).toEqual([
      'first-divergence',
      'similarity',
      'statistics',
      'weights',
      'qconfig',
      'devices',
      'unfused',
      'module-calls',
      'memory',
    ]);
    expect(report.histograms[0]!.node).toBe('relu0');
    expect(report.similarity!.points.find((p) => p.name === 'relu0')!.flagged).toBe(true);
    expect(existsSync(written!.html)).toBe(true);
    expect(Object.keys(written!.json).sort()).toEqual(
      [
        'checkDeployDevice',
        'checkQconfig',
        'checkUnfusedOperations',
        'compareWeights',
        'featuremapSimilarity',
        'firstDivergence',
        'getModuleCalledCount',
        'getRawFeatures',
        'memoryProfile',
      ].sort(),
    );
    const sim = JSON.parse(readFileSync(written!.json.featuremapSimilarity!, 'utf8'));
    expect(sim.flagged[0]).toBe('relu0');
    expect(readFileSync(written!.html, 'utf8')).toContain('first diverges at relu0');
  });

  it('QvsQ compares the calibrated model with its conversion and writes nothing with outDir null', async () => {
    const s = stagesOf(new TinyResNet(), 'bayes');
    const { results, written } = await modelProfiler(s.calibrated, s.fixed, x, { mode: 'QvsQ', outDir: null });
    expect(written).toBeNull();
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
    const { results } = await modelProfiler(calibrated, qat, x, {
      mode: 'CvsQ',
      outDir: null,
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
    await expect(modelProfiler(s.fixed, s.calibrated, x, { mode: 'QvsQ', outDir: null })).rejects.toThrow(
      /mode 'QvsQ' compares a QAT model with a fixed point one, got fixed-point vs qat/,
    );
    await expect(modelProfiler(s.float, s.calibrated, x, { mode: 'XvsY' as never, outDir: null })).rejects.toThrow(
      /mode must be 'FvsQ', 'CvsQ' or 'QvsQ'/,
    );
  });
});
