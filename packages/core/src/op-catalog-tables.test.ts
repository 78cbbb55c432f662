// The op names the marches' capability tables and the fixed-point conversion rules use are all in
// the op catalog (defineCapabilities already refuses unknown ones; this names the tables explicitly).
import { DEFAULT_CONVERT_RULES } from '@qtk/fixed-point';
import { BAYES_CAPABILITIES } from '@qtk/march-bayes';
import { BERNOULLI2_CAPABILITIES } from '@qtk/march-bernoulli2';
import { getOp, hasOp } from '@qtk/spec';
import { describe, expect, it } from 'vitest';

describe('op names agree with the op catalog', () => {
  it.each([
    ['bayes', BAYES_CAPABILITIES],
    ['bernoulli2', BERNOULLI2_CAPABILITIES],
  ] as const)('every op of the %s capability table is in the catalog', (_, table) => {
    expect(table.ops.length).toBeGreaterThan(10);
    expect(table.ops.map((o) => o.op).filter((op) => !hasOp(op))).toEqual([]);
    // the table's fusable parts name catalog ops with a fusion role (a fused ReLU6 is a Clip)
    for (const o of table.ops) {
      for (const part of o.fusable ?? []) {
        expect([o.op, part, getOp(part).fusionRoles.length > 0]).toEqual([o.op, part, true]);
      }
      if (o.fusable) expect(getOp(o.op).fusionRoles).toContain('base');
    }
  });

  it('every capability-table op a fixed-point conversion rule names is in the catalog', () => {
    const named = DEFAULT_CONVERT_RULES.flatMap((r) => r.ops);
    expect(named.length).toBeGreaterThan(30);
    expect(named.filter((op) => !hasOp(op))).toEqual([]);
  });
});
