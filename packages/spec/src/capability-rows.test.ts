import { describe, expect, it } from 'vitest';
import { opsWithImpl, spatialDimsIn } from './capability-rows.js';
import { checkOpSupport, defineCapabilities } from './march-backend.js';

describe('capability rows', () => {
  it('opsWithImpl gives one row per op, in order, with the implementation', () => {
    expect(opsWithImpl('passthrough', 'Reshape', 'Flatten')).toEqual([
      { op: 'Reshape', impl: 'passthrough' },
      { op: 'Flatten', impl: 'passthrough' },
    ]);
    expect(opsWithImpl('integer')).toEqual([]);
  });
  it('spatialDimsIn constrains the spatial rank a table answers for', () => {
    expect(spatialDimsIn(2, 3)).toEqual({ kind: 'oneOf', attr: 'spatialDims', values: [2, 3] });
    const table = defineCapabilities({
      version: 1,
      activationDtypes: ['qint8'],
      weightDtypes: ['qint8'],
      weightPerChannel: true,
      ops: [{ op: 'Conv', impl: 'integer', constraints: [spatialDimsIn(2)] }, ...opsWithImpl('table', 'Exp')],
    });
    expect(checkOpSupport(table, { op: 'Conv', attrs: { spatialDims: 2 } }).ok).toBe(true);
    expect(checkOpSupport(table, { op: 'Conv', attrs: { spatialDims: 3 } })).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/spatialDims.*one of 2/),
    });
    expect(table.ops.map((o) => [o.op, o.impl])).toEqual([
      ['Conv', 'integer'],
      ['Exp', 'table'],
    ]);
  });
});
