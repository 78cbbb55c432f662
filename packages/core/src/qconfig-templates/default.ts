import { defaultQatOutQconfig, defaultQatQconfig, type QConfig } from '@qtk/fake-quant';
import type { Node } from '@qtk/ir';
import { DeQuantStub, QuantStub } from '@qtk/nn';
import type { NamedQconfigSetter, QconfigSetterContext, QconfigSetterNode } from '../qconfig-setter.js';

export interface DefaultQconfigSetterOptions {
  /** The qconfig of every quantized node; default defaultQatQconfig (int8). */
  readonly qconfig?: QConfig;
  /** The qconfig of a conv / linear output that goes straight to a DeQuantStub; default defaultQatOutQconfig (int32). */
  readonly outQconfig?: QConfig;
}

/**
 * Whether every use of the node's value reaches a DeQuantStub through pass-through ops only
 * (reshape, flatten: no scale of their own), so nothing quantized reads it.
 */
function onlyDequantized(ctx: QconfigSetterContext, byNode: ReadonlyMap<Node, QconfigSetterNode>, node: Node): boolean {
  if (node.users.length === 0) return false;
  for (const user of node.users) {
    const u = byNode.get(user);
    if (!u) return false; // the graph output without a DeQuantStub
    if (u.module instanceof DeQuantStub) continue;
    const passThrough = u.op !== null && !u.ownOutputScale && !(u.module instanceof QuantStub);
    if (!passThrough || user.inputNodes.length !== 1 || !onlyDequantized(ctx, byNode, user)) return false;
  }
  return true;
}

/**
 * The default template: every quantized node gets `qconfig` (int8), and every conv / linear
 * output that only feeds the model's outputs (DeQuantStubs, through reshapes) gets `outQconfig`,
 * a high-precision (int32) output, when the march has high-precision outputs. Nodes whose current
 * qconfig is null (the base qconfigDict's, or an earlier setter's) stay unquantized.
 */
export function defaultQconfigSetter(options: DefaultQconfigSetterOptions = {}): NamedQconfigSetter {
  const qc = options.qconfig ?? defaultQatQconfig;
  const out = options.outQconfig ?? defaultQatOutQconfig;
  return {
    name: 'default',
    apply(ctx) {
      const highPrecision = ctx.capabilities.highPrecisionOutputDtypes.length > 0;
      const byNode = new Map(ctx.nodes.map((n) => [n.node, n]));
      for (const n of ctx.nodes) {
        if (ctx.qconfigOf(n.name) === null) continue;
        const output = highPrecision && n.weighted && onlyDequantized(ctx, byNode, n.node);
        ctx.setQconfig(n.name, output ? out : qc);
      }
      return undefined;
    },
  };
}
