import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InvalidArgumentError } from '@qtk/tensor';
import { afterEach, describe, expect, it } from 'vitest';
import { ReportDirError } from '../report/report-dir-error.js';
import type { ProfilerReport } from '../report/report-model.js';
import { writeProfilerReport, writeProfilerReportSync } from './write-report.js';

const report: ProfilerReport = { version: 1, title: 'r', meta: {}, summary: [], tables: [], histograms: [] };
const results = {
  featuremapSimilarity: { version: 1, nodes: [{ name: 'conv0', sqnr: null }] },
  checks: { version: 1 },
};

let dirs: string[] = [];
const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'qtk-write-report-'));
  dirs.push(d);
  return d;
};
afterEach(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  dirs = [];
});

describe('writeProfilerReport', () => {
  it('creates the directory and writes profiler.html and one JSON per tool, replacing earlier files whole', async () => {
    const out = join(tempDir(), 'a', 'b');
    const written = await writeProfilerReport(out, report, results);
    expect(written).toEqual({
      html: join(out, 'profiler.html'),
      json: { featuremapSimilarity: join(out, 'featuremapSimilarity.json'), checks: join(out, 'checks.json') },
    });
    expect(JSON.parse(readFileSync(written.json.featuremapSimilarity!, 'utf8'))).toEqual(results.featuremapSimilarity);
    expect(readFileSync(written.html, 'utf8')).toMatch(/^<!doctype html>/);

    writeProfilerReportSync(out, { ...report, title: 'second' }, { checks: { version: 1, n: 2 } });
    expect(JSON.parse(readFileSync(join(out, 'checks.json'), 'utf8'))).toEqual({ version: 1, n: 2 });
    expect(readFileSync(written.html, 'utf8')).toContain('<title>second</title>');
    // no temporary file left behind
    expect(readdirSync(out).sort()).toEqual(['checks.json', 'featuremapSimilarity.json', 'profiler.html']);
  });

  it('refuses an output path that is a file, or under one, with ReportDirError', async () => {
    const file = join(tempDir(), 'taken');
    writeFileSync(file, 'keep');
    for (const out of [file, join(file, 'sub')]) {
      await expect(writeProfilerReport(out, report, results)).rejects.toSatisfy(
        (e) => ReportDirError.isInstance(e) && e.path === out && /not a directory|is a file/.test(e.message),
      );
      expect(() => writeProfilerReportSync(out, report, results)).toThrow(ReportDirError);
    }
    expect(readFileSync(file, 'utf8')).toBe('keep');
  });

  it('refuses a tool name that is not a plain file name, or a result holding NaN, before writing anything', async () => {
    const out = join(tempDir(), 'out');
    await expect(writeProfilerReport(out, report, { '../escape': {} })).rejects.toThrow(InvalidArgumentError);
    expect(() => writeProfilerReportSync(out, report, { 'a/b': {} })).toThrow(/'a\/b' cannot be a file name/);
    expect(() => writeProfilerReportSync(out, report, { stats: { nodes: [{ max: Infinity }] } })).toThrow(
      /stats\.nodes\[0\]\.max is not a finite number/,
    );
    mkdirSync(out);
    expect(readdirSync(out)).toEqual([]);
  });
});
