// A ReportTable from any tool's list of records, with columns inferred from the values: the quick way to
// put a tool's JSON in the report.
import type { ReportCell, ReportColumn, ReportTable } from './report-model.js';

export interface TableOfOptions {
  readonly description?: string;
  /** Overrides per key (label, kind, digits, help); a key mapped to null is left out. */
  readonly columns?: Readonly<Record<string, Partial<Omit<ReportColumn, 'key'>> | null>>;
  readonly flagKey?: string;
  readonly sort?: ReportTable['sort'];
}

/** 'maxAbsDiff' → 'max abs diff', 'sqnr_db' → 'sqnr db'. */
const labelOf = (key: string): string =>
  key
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/_/g, ' ')
    .toLowerCase();

/** A value as a cell: numbers that are not finite become null, lists and records their text. */
function cellOf(v: unknown): ReportCell {
  if (v === null || v === undefined) return null;
  if (typeof v === 'number') return Number.isFinite(v) ? v : null;
  if (typeof v === 'string' || typeof v === 'boolean') return v;
  if (Array.isArray(v) && v.every((x) => typeof x === 'number' || typeof x === 'string')) return `[${v.join(', ')}]`;
  return JSON.stringify(v);
}

/**
 * `rows` as a table: one column per key in first-seen order, 'number' where every present value is a number,
 * else 'text'; labels from the keys unless `options.columns` says otherwise. The `flagKey` property is not a
 * column: its rows are highlighted.
 */
export function tableOf(
  id: string,
  title: string,
  rows: readonly Readonly<Record<string, unknown>>[],
  options: TableOfOptions = {},
): ReportTable {
  const keys: string[] = [];
  const seen = new Set<string>();
  for (const r of rows) {
    for (const k of Object.keys(r)) {
      if (!seen.has(k)) keys.push(k);
      seen.add(k);
    }
  }
  const cells = rows.map((r) => Object.fromEntries(keys.map((k) => [k, cellOf(r[k])])));
  const columns: ReportColumn[] = [];
  for (const key of keys) {
    const override = options.columns?.[key];
    if (override === null || key === options.flagKey) continue;
    // a column of nulls only is text: nothing in it sorts as a number
    const numeric =
      cells.some((r) => typeof r[key] === 'number') &&
      cells.every((r) => r[key] === null || typeof r[key] === 'number');
    columns.push({ key, label: labelOf(key), kind: numeric ? 'number' : 'text', ...override });
  }
  return {
    id,
    title,
    ...(options.description !== undefined && { description: options.description }),
    columns,
    rows: cells,
    ...(options.flagKey !== undefined && { flagKey: options.flagKey }),
    ...(options.sort !== undefined && { sort: options.sort }),
  };
}
