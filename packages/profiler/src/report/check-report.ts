// What renderProfilerHtml refuses: a report the page could not draw faithfully.
import { InvalidArgumentError } from '@qtk/tensor';
import type { ProfilerReport } from './report-model.js';

const TABLE_ID = /^[A-Za-z0-9_-]+$/;
const KINDS = new Set(['text', 'number', 'percent']);

/** The path of the first number in `value` that is NaN or infinite (JSON would turn it into null silently). */
export function nonFiniteAt(value: unknown, path: string): string | null {
  if (typeof value === 'number') return Number.isFinite(value) ? null : path;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const p = nonFiniteAt(value[i], `${path}[${i}]`);
      if (p) return p;
    }
    return null;
  }
  if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      const p = nonFiniteAt(v, `${path}.${k}`);
      if (p) return p;
    }
  }
  return null;
}

const fail = (what: string): never => {
  throw new InvalidArgumentError(`renderProfilerHtml: ${what}`);
};

/** Throws InvalidArgumentError naming the first part of `report` that is malformed. */
export function checkReport(report: ProfilerReport): void {
  if (report.version !== 1) fail(`report.version is ${String(report.version)}; this QTK renders version 1`);
  if (typeof report.title !== 'string') fail('report.title must be a string');
  if (!Array.isArray(report.summary) || !Array.isArray(report.tables) || !Array.isArray(report.histograms)) {
    fail('report.summary, report.tables and report.histograms must be arrays (empty when there is nothing to show)');
  }
  const bad = nonFiniteAt(report, 'report');
  if (bad) fail(`${bad} is not a finite number; use null for a value that does not exist`);
  const ids = new Set<string>();
  report.tables.forEach((t, i) => {
    const at = `report.tables[${i}] ('${t.id}')`;
    if (!TABLE_ID.test(t.id)) fail(`${at}: a table id may hold only letters, digits, '-' and '_'`);
    if (ids.has(t.id)) fail(`${at}: two tables have the id '${t.id}'; give each a unique id`);
    ids.add(t.id);
    const keys = new Set<string>();
    for (const c of t.columns) {
      if (!KINDS.has(c.kind)) fail(`${at}: column '${c.key}' has kind '${c.kind}'; use text, number or percent`);
      if (keys.has(c.key)) fail(`${at}: two columns show '${c.key}'`);
      keys.add(c.key);
    }
    if (t.sort && !keys.has(t.sort.key)) fail(`${at}: sort key '${t.sort.key}' is not one of its columns`);
  });
  report.histograms.forEach((h, i) => {
    if (h.edges.length !== h.counts.length + 1) {
      fail(
        `report.histograms[${i}] ('${h.node}'): ${h.counts.length} counts need ${h.counts.length + 1} edges, not ${h.edges.length}`,
      );
    }
  });
}
