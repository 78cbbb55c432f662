import '@qtk/march-bayes';
import type { QatModule } from '@qtk/core';
import { describe, expect, it } from 'vitest';
import { featuremapSimilarity } from '../compare/featuremap-similarity.js';
import { renderProfilerHtml } from './render-html.js';
import { similaritySection } from './similarity-section.js';
import { randomInputs, TinyResNet } from '@qtk/test-models';
import { stagesOf } from '../testing/stages.js';

describe('similaritySection', () => {
  const { float, calibrated } = stagesOf(new TinyResNet(), 'bayes');
  const fq = (calibrated.getSubmodule('relu0') as QatModule).activationPostProcess!;
  (fq.scale.values() as Float32Array).fill(1e-4);
  const result = featuremapSimilarity(float, calibrated, randomInputs(11, 4));

  it('plots the metric per node with the flagged nodes, and tables every metric per node', () => {
    const { plot, table } = similaritySection(result);
    expect(plot.points.map((p) => p.name)).toEqual(result.nodes.map((n) => n.name));
    expect(plot.points.filter((p) => p.flagged).map((p) => p.name)).toEqual(result.flagged);
    expect(plot.points[0]!.name).toBe('x');
    const relu0 = plot.points.find((p) => p.name === 'relu0')!;
    expect(relu0.value).toBeLessThan(0.9);
    expect(relu0.maxDiffSteps).toBeGreaterThan(1000);
    expect(plot.threshold).toBe(0.99);
    expect(table.rows).toHaveLength(result.nodes.length);
    expect(table.rows.filter((r) => r.flagged).map((r) => r.name)).toEqual(result.flagged);
    const row = table.rows.find((r) => r.name === '_generated_add_0')!;
    expect(row.sameInputCosine).toBeGreaterThan(0.99);
    expect(row.cosine).toBeLessThan(0.99);
    // every key a column shows is in the rows
    for (const c of table.columns) expect(Object.hasOwn(row, c.key), c.key).toBe(true);
  });

  it('plots the chosen metric, and the same-input series only for cosine', () => {
    const { plot } = similaritySection(
      featuremapSimilarity(float, calibrated, randomInputs(11, 2), { metric: 'sqnr' }),
    );
    expect(plot.metric).toBe('sqnr');
    expect(plot.threshold).toBe(20);
    expect(plot.points.every((p) => p.sameInput === null)).toBe(true);
    expect(plot.points.find((p) => p.name === 'relu0')!.value).toBeLessThan(20);
  });

  it('renders: its parts form a valid report', () => {
    const { plot, table } = similaritySection(result, { id: 'float-vs-calibrated' });
    const html = renderProfilerHtml({
      version: 1,
      title: 't',
      meta: {},
      summary: [],
      similarity: plot,
      tables: [table],
      histograms: [],
    });
    expect(html).toContain('float-vs-calibrated');
  });
});
