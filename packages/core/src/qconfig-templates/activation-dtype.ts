import { type QConfig, qconfig } from '@qtk/fake-quant';
import { QConfigError, type QuantDType, type ObserverDType } from '@qtk/spec';
import type { QconfigSetterContext } from '../qconfig-setter.js';

/** The qconfig with its activation fake-quants made `dtype` (range reset to the dtype's); weights unchanged. */
export function withActivationDtype(q: QConfig, dtype: ObserverDType): QConfig {
  if (!q.activation) return q;
  return qconfig(q.activation.withArgs({ dtype, quantMin: null, quantMax: null }), q.weight);
}

/**
 * Gives the named nodes `dtype` activations. A march without that dtype at all is an error naming
 * the template; nodes whose op the march's table limits to other dtypes keep theirs and are
 * returned (the caller decides whether to warn). Nodes without an activation qconfig (float,
 * high-precision outputs) and nodes a hybrid partition put on the CPU are left alone.
 */
export function setActivationDtype(
  ctx: QconfigSetterContext,
  names: readonly string[],
  dtype: ObserverDType,
  template: string,
): string[] {
  const table = ctx.capabilities;
  if (!table.activationDtypes.includes(dtype as QuantDType)) {
    throw new QConfigError(
      `${template}: march '${ctx.march.id}' has no ${dtype} activations (it supports ${table.activationDtypes.join(', ')}); ` +
        `remove this template from qconfigSetter or prepare for a march with ${dtype} activations`,
    );
  }
  const byName = new Map(ctx.nodes.map((n) => [n.name, n]));
  const kept: string[] = [];
  for (const name of names) {
    const q = ctx.qconfigOf(name);
    const node = byName.get(name);
    if (!q?.activation || !node || node.device === 'CPU') continue;
    const cap = node.op ? table.ops.find((o) => o.op === node.op) : undefined;
    if (cap?.dtypes && !cap.dtypes.includes(dtype as QuantDType)) {
      kept.push(`${name} (${node.op}: ${cap.dtypes.join(', ')})`);
      continue;
    }
    ctx.setQconfig(name, withActivationDtype(q, dtype));
  }
  return kept;
}
