// One predicate: a march's supportsNode (what the hybrid partition, the checks and the device tables
// ask) must say yes for exactly the nodes its convertNode converts. Every probe model, of the ops the
// table claims (at each dtype it claims) and of the ops it does not, is converted with a spy on
// convertNode that asks supportsNode the same question for each node.
import { ConversionError, convertFx } from '@qtk/core';
import { defaultQatQconfig, type QConfig } from '@qtk/fake-quant';
import {
  UnsupportedOpError,
  type ConvertNodeContext,
  type MarchBackendV1,
  type NodeSupport,
  type ObserverDType,
  type OpCapability,
  type QuantDType,
} from '@qtk/spec';
import { Generator } from '@qtk/tensor';
import { expect, it } from 'vitest';
import { calibratedProbe } from './probe-run.js';
import type { OpProbe } from './probes.js';

export interface NodeAgreement {
  readonly node: string;
  readonly converted: boolean;
  readonly support: NodeSupport;
}

/** The activation dtype the partition would ask about: the output's (a high-precision output: none), else the input's. */
function dtypeAsked(march: MarchBackendV1, ctx: ConvertNodeContext): QuantDType | null {
  const out = ctx.outputQparams?.dtype;
  if (out !== undefined) return march.capabilities.activationDtypes.includes(out) ? out : null;
  const input = ctx.node.inputNodes.map((n) => ctx.qparamsOf(n)).find((q) => q !== null);
  return input ? input.dtype : null;
}

/** Converts `qat` with a spy: for every node convertFx hands the march, whether it converted and what supportsNode says. */
export function agreementOf(march: MarchBackendV1, qat: Parameters<typeof convertFx>[0]): NodeAgreement[] {
  const convertNode = march.hooks.convertNode!;
  const supportsNode = march.hooks.supportsNode!;
  const seen: NodeAgreement[] = [];
  const spy: MarchBackendV1 = {
    ...march,
    hooks: {
      ...march.hooks,
      convertNode(ctx) {
        const support = supportsNode.call(march.hooks, {
          march: march.id,
          node: ctx.node,
          module: ctx.module,
          op: ctx.op,
          attrs: ctx.attrs,
          fused: ctx.fused,
          dtype: dtypeAsked(march, ctx),
        });
        try {
          const converted = convertNode.call(march.hooks, ctx);
          seen.push({ node: ctx.node.name, converted: converted !== undefined, support });
          return converted;
        } catch (e) {
          if (UnsupportedOpError.isInstance(e)) seen.push({ node: ctx.node.name, converted: false, support });
          throw e;
        }
      },
    },
  };
  try {
    convertFx(qat, { march: spy, onWarning: () => {} });
  } catch (e) {
    if (!ConversionError.isInstance(e)) throw e;
  }
  return seen;
}

/**
 * One test per probe: supportsNode agrees with convertNode on every node. Ops of the table are probed at
 * each dtype they claim; probes of ops the table lacks at the table's first activation dtype.
 */
export function describePredicateAgreement(
  march: MarchBackendV1,
  probes: Readonly<Record<string, OpProbe>>,
  dtypesOf: (cap: OpCapability) => readonly ObserverDType[],
  qconfigs: Readonly<Record<ObserverDType, QConfig>>,
  seed: number,
): void {
  if (!march.hooks.supportsNode || !march.hooks.convertNode) {
    it('supportsNode agrees with convertNode', (ctx) =>
      ctx.skip('the march has no supportsNode hook: the hybrid partition judges it by its capability table alone'));
    return;
  }
  const first = march.capabilities.activationDtypes.find((d): d is ObserverDType => d === 'qint8' || d === 'qint16');
  for (const [op, probe] of Object.entries(probes)) {
    const claimed = march.capabilities.ops.find((o) => o.op === op);
    const cap: OpCapability = claimed ?? { op, constraints: [] };
    const dtypes = claimed ? dtypesOf(cap) : first ? [first] : [];
    for (const dtype of dtypes) {
      it(`${op} (${claimed ? 'in the table' : 'not in the table'}, ${dtype}, ${probe.model}): supportsNode says yes exactly for the nodes convertNode converts`, () => {
        const built = probe.build({ capability: cap, dtype, generator: new Generator(seed) });
        const qat = calibratedProbe(march, built, qconfigs[dtype] ?? defaultQatQconfig);
        const nodes = agreementOf(march, qat);
        expect(nodes.length).toBeGreaterThan(0);
        const disagree = nodes.filter((n) => n.support.ok !== n.converted);
        expect(
          disagree.map((n) => `${n.node}: converted ${n.converted}, supportsNode ${JSON.stringify(n.support)}`),
        ).toEqual([]);
        // a probe of an op the table claims converts its op
        if (claimed) expect(nodes.some((n) => n.converted)).toBe(true);
      });
    }
  }
}
