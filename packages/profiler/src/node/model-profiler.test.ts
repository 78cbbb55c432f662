import '@qtk/march-bayes';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { QatModule } from '@qtk/core';
import { describe, expect, it } from 'vitest';
import { modelProfiler } from './model-profiler.js';
import { randomInputs, TinyResNet } from '@qtk/test-models';
import { stagesOf } from '../testing/stages.js';

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
    // the qconfig check also as horizon_plugin_pytorch's text file, beside its JSON
    const qconfigInfo = readFileSync(join(dirname(written!.html), 'qconfig_info.txt'), 'utf8');
    expect(qconfigInfo).toMatch(/^march: \w+\n\nnode +type +device/);
    expect(qconfigInfo).toContain('relu0');
    const sim = JSON.parse(readFileSync(written!.json.featuremapSimilarity!, 'utf8'));
    expect(sim.flagged[0]).toBe('relu0');
    expect(readFileSync(written!.html, 'utf8')).toContain('first diverges at relu0');
  });
});
