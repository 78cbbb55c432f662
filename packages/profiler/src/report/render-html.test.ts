import { createHash } from 'node:crypto';
import { InvalidArgumentError } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { renderProfilerHtml } from './render-html.js';
import type { ProfilerReport, ReportTable } from './report-model.js';

const EVIL = '<img src=x onerror=alert(1)></script><!--<script>alert(2)</script>&amp;';

const table: ReportTable = {
  id: 'similarity',
  title: 'Similarity per node',
  columns: [
    { key: 'name', label: 'node', kind: 'text' },
    { key: 'cosine', label: 'cosine', kind: 'number' },
  ],
  rows: [
    { name: 'conv0', cosine: 0.9991 },
    { name: EVIL, cosine: null },
  ],
};

const report: ProfilerReport = {
  version: 1,
  title: `report of ${EVIL}`,
  meta: { models: ['float', EVIL], mode: 'FvsQ', march: 'bayes', inputShapes: [[1, 3, 8, 8]] },
  summary: [{ severity: 'error', text: `first divergence at ${EVIL}` }],
  similarity: {
    metric: 'cosine',
    threshold: 0.99,
    points: [
      { name: 'conv0', value: 0.9991, maxDiffSteps: 1, flagged: false },
      { name: EVIL, value: 0.5, maxDiffSteps: null, flagged: true },
    ],
  },
  tables: [table],
  histograms: [{ title: EVIL, node: EVIL, edges: [0, 1, 2], counts: [3, 4], clip: { min: 0, max: 1.5 } }],
};

const scriptsOf = (html: string) => [...html.matchAll(/<script([^>]*)>([\s\S]*?)<\/script>/g)];
const sha = (text: string) => `'sha256-${createHash('sha256').update(text).digest('base64')}'`;

describe('renderProfilerHtml', () => {
  const html = renderProfilerHtml(report);

  it('is one file: three inline scripts (data, Chart.js with its MIT header, the page), nothing loaded from elsewhere', () => {
    const scripts = scriptsOf(html);
    expect(scripts.map((s) => s[1])).toEqual([' type="application/json" id="qtk-report-data"', '', '']);
    expect(scripts[1]![2]).toMatch(/^\/\*!\s*\n \* Chart\.js v4\.[\s\S]*?Released under the MIT License\s*\n \*\//);
    expect(scripts[1]![2]).not.toContain('sourceMappingURL');
    // outside Chart.js's code (which only names its home page): no URL, stylesheet link or import
    const page = html.replace(scripts[1]![2]!, '');
    expect(/\b(?:src|href)\s*=\s*["']?(?:https?:|\/\/)|<link\b|@import|url\(/i.test(page)).toBe(false);
  });

  it('embeds the report as JSON that parses back unchanged and holds no markup character', () => {
    const data = scriptsOf(html)[0]![2]!;
    expect(data).not.toMatch(/[<>&]/);
    expect(JSON.parse(data)).toEqual(report);
  });

  it('never writes a report text as markup: the title is escaped, every other text is JSON data', () => {
    expect(html.includes(EVIL)).toBe(false);
    expect(html.includes('<img')).toBe(false);
    expect(html).toContain(
      '<title>report of &lt;img src=x onerror=alert(1)&gt;&lt;/script&gt;&lt;!--&lt;script&gt;alert(2)&lt;/script&gt;&amp;amp;</title>',
    );
  });

  it('allows only its own scripts and style by hash (Content-Security-Policy)', () => {
    const csp = /<meta http-equiv="Content-Security-Policy" content="([^"]+)">/.exec(html)![1]!;
    const [, chart, page] = scriptsOf(html).map((s) => s[2]!);
    const style = /<style>([\s\S]*?)<\/style>/.exec(html)![1]!;
    expect(csp.split('; ')).toEqual([
      "default-src 'none'",
      `script-src ${sha(chart!)} ${sha(page!)}`,
      `style-src ${sha(style)}`,
      'img-src data:',
    ]);
  });

  it('refuses a report it could not show faithfully, naming the part', () => {
    const bad = (r: unknown) => () => renderProfilerHtml(r as ProfilerReport);
    expect(bad({ ...report, version: 2 })).toThrow(/report.version is 2; this QTK renders version 1/);
    expect(bad({ ...report, tables: [table, table] })).toThrow(/two tables have the id 'similarity'/);
    expect(bad({ ...report, tables: [{ ...table, id: 'a b' }] })).toThrow(/letters, digits/);
    expect(bad({ ...report, tables: [{ ...table, rows: [{ name: 'x', cosine: Number.NaN }] }] })).toThrow(
      /report\.tables\[0\]\.rows\[0\]\.cosine is not a finite number; use null/,
    );
    expect(bad({ ...report, tables: [{ ...table, sort: { key: 'sqnr' } }] })).toThrow(/sort key 'sqnr'/);
    expect(bad({ ...report, tables: [{ ...table, columns: [{ key: 'name', label: 'n', kind: 'date' }] }] })).toThrow(
      /kind 'date'/,
    );
    expect(bad({ ...report, histograms: [{ ...report.histograms[0]!, edges: [0, 1] }] })).toThrow(
      /2 counts need 3 edges, not 2/,
    );
    expect(bad({ ...report, summary: undefined })).toThrow(InvalidArgumentError);
  });
});
