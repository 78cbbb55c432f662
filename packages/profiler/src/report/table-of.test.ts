import { describe, expect, it } from 'vitest';
import { tableOf } from './table-of.js';

describe('tableOf', () => {
  const rows = [
    { name: 'conv0', maxAbsDiff: 0.5, shape: [1, 8, 4, 4], sqnr: Infinity, cpu: false },
    { name: 'fc', maxAbsDiff: null, extra: { a: 1 }, sqnr: 31.5, cpu: true },
  ];

  it('infers one column per key in first-seen order, numbers where every present value is one', () => {
    const t = tableOf('t', 'T', rows, { flagKey: 'cpu', columns: { name: { label: 'node' } } });
    expect(t.columns).toEqual([
      { key: 'name', label: 'node', kind: 'text' },
      { key: 'maxAbsDiff', label: 'max abs diff', kind: 'number' },
      { key: 'shape', label: 'shape', kind: 'text' },
      { key: 'sqnr', label: 'sqnr', kind: 'number' },
      { key: 'extra', label: 'extra', kind: 'text' },
    ]);
    expect(t.flagKey).toBe('cpu');
  });

  it('makes every cell JSON: no Infinity, lists and records as text, missing keys null', () => {
    const t = tableOf('t', 'T', rows, { columns: { extra: null } });
    expect(t.columns.map((c) => c.key)).toEqual(['name', 'maxAbsDiff', 'shape', 'sqnr', 'cpu']);
    expect(t.rows).toEqual([
      { name: 'conv0', maxAbsDiff: 0.5, shape: '[1, 8, 4, 4]', sqnr: null, cpu: false, extra: null },
      { name: 'fc', maxAbsDiff: null, shape: null, sqnr: 31.5, cpu: true, extra: '{"a":1}' },
    ]);
    expect(t.columns.find((c) => c.key === 'cpu')!.kind).toBe('text');
  });
});
