import '@qtk/march-bernoulli2';
import { defaultQatQconfig } from '@qtk/fake-quant';
import { marches, type MarchBackendV1 } from '@qtk/spec';
import { Generator } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { agreementOf } from './predicate-agreement.js';
import { calibratedProbe } from './probe-run.js';
import { OP_PROBES } from './probes.js';

describe('agreementOf', () => {
  const bernoulli2 = marches.get('bernoulli2');
  const hardSigmoid = () =>
    calibratedProbe(
      bernoulli2,
      OP_PROBES.HardSigmoid!.build({
        capability: { op: 'HardSigmoid', constraints: [] },
        dtype: 'qint8',
        generator: new Generator(1),
      }),
      defaultQatQconfig,
    );

  it("bernoulli2's supportsNode refuses the HardSigmoid its table lacks, as its converter does", () => {
    const nodes = agreementOf(bernoulli2, hardSigmoid());
    const hs = nodes.filter((n) => !n.converted);
    expect(hs).toHaveLength(1);
    expect(hs[0]!.support).toEqual({
      ok: false,
      reason: 'op not in table',
      detail: "op 'HardSigmoid' is not in the capability table",
    });
    expect(nodes.every((n) => n.support.ok === n.converted)).toBe(true);
  });

  it('finds a predicate that claims what the converter refuses', () => {
    const claimsAll: MarchBackendV1 = {
      ...bernoulli2,
      hooks: { ...bernoulli2.hooks, supportsNode: () => ({ ok: true }) },
    };
    const wrong = agreementOf(claimsAll, hardSigmoid()).filter((n) => n.support.ok !== n.converted);
    expect(wrong.map((n) => [n.converted, n.support.ok])).toEqual([[false, true]]);
  });
});
