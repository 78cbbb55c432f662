import { InvalidArgumentError } from '@qtk/tensor';
import type { NamedQconfigSetter } from '../qconfig-setter.js';
import { setActivationDtype } from './activation-dtype.js';
import {
  checkSensitivityTable,
  mostSensitive,
  SensitivityTableError,
  type SensitivityTableV1,
} from './sensitivity-table.js';

export interface SensitivitySetterOptions {
  /** How many of the most sensitive nodes get int16 activations. */
  readonly topK: number;
}

/**
 * int16 activations on the `topK` most sensitive nodes of a sensitivity table (the JSON `qtk
 * sensitivity` writes); the other nodes keep what earlier setters gave them. Every name in the
 * table must be a node of the model's fused graph, by node name or module path (SensitivityTableError lists those that are not:
 * the table is of another model or another march's fusion). A march without int16 activations
 * is a QConfigError; a picked node whose op the march runs at int8 only keeps int8, with a warning.
 */
export function sensitivitySetter(table: SensitivityTableV1, options: SensitivitySetterOptions): NamedQconfigSetter {
  const checked = checkSensitivityTable(table);
  const { topK } = options;
  if (!Number.isInteger(topK) || topK < 0)
    throw new InvalidArgumentError(`sensitivitySetter: topK must be a whole number >= 0, got ${topK}`);
  return {
    name: 'sensitivity',
    apply(ctx) {
      // a table names nodes by fused-graph node name or by module path (the profiler's sensitivity writes paths)
      const byName = new Map<string, string>();
      for (const n of ctx.nodes) {
        byName.set(n.name, n.name);
        if (n.path && !byName.has(n.path)) byName.set(n.path, n.name);
      }
      const known = new Set(ctx.nodes.map((n) => n.name));
      const unknown = checked.nodes.map((n) => n.name).filter((name) => !byName.has(name));
      if (unknown.length)
        throw new SensitivityTableError(
          `sensitivitySetter: the sensitivity table names nodes the model does not have: ${unknown.join(', ')}; ` +
            `the model's nodes are ${[...known].join(', ')} (was the table written for this model and march '${ctx.march.id}'?)`,
          unknown,
        );
      const picked = mostSensitive(
        { ...checked, nodes: checked.nodes.map((n) => ({ ...n, name: byName.get(n.name)! })) },
        topK,
      );
      const kept = setActivationDtype(ctx, picked, 'qint16', 'sensitivitySetter');
      if (kept.length)
        ctx.warn(
          `sensitivitySetter: march '${ctx.march.id}' runs these sensitive nodes' ops at other dtypes only: ${kept.join(', ')}`,
        );
      return undefined;
    },
  };
}
