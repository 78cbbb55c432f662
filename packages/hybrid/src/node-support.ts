// Whether the march's capability table runs a node: its catalog op (and, for a fused module, each
// part), at the dtype its qconfig asks for, with its attributes. The first failing check names the
// reason, so a user sees "not in the table" before "dtype" before "attribute constraint".
import type { DeployReason } from '@qtk/core';
import type { GraphModule, Node } from '@qtk/ir';
import { checkOpSupport, opOfNode, type CapabilityTable, type OpMatch, type QuantDType } from '@qtk/spec';

export interface NodeVerdict {
  readonly ok: boolean;
  readonly reason: DeployReason;
  readonly detail?: string;
}

const SUPPORTED: NodeVerdict = { ok: true, reason: 'supported' };

function checkOne(
  table: CapabilityTable,
  op: string,
  attrs: Readonly<Record<string, unknown>>,
  dtype: QuantDType | null,
): NodeVerdict {
  if (!table.ops.some((o) => o.op === op))
    return { ok: false, reason: 'op not in table', detail: `op '${op}' is not in the capability table` };
  if (dtype !== null) {
    const d = checkOpSupport(table, { op, dtype });
    if (!d.ok) return { ok: false, reason: 'dtype', detail: `${op}: ${d.reason}` };
  }
  const a = checkOpSupport(table, { op, attrs });
  if (!a.ok) return { ok: false, reason: 'attribute constraint', detail: `${op}: ${a.reason}` };
  return SUPPORTED;
}

/** The table's verdict on a matched op; a fused module's parts must each be table ops or fusable into its base. */
export function opVerdict(table: CapabilityTable, match: OpMatch, dtype: QuantDType | null): NodeVerdict {
  if (!match.fused) return checkOne(table, match.op, match.attrs, dtype);
  const { base, baseAttrs, parts } = match.fused;
  const verdict = checkOne(table, base, baseAttrs, dtype);
  if (!verdict.ok) return verdict;
  const fusable = table.ops.find((o) => o.op === base)?.fusable ?? [];
  for (const part of parts) {
    if (part === base || fusable.includes(part)) continue;
    const v = checkOne(table, part, {}, null);
    if (!v.ok) return v;
  }
  return SUPPORTED;
}

/**
 * The verdict for a node, or null when the catalog has no op for a function or method call (shape
 * queries, tuple indexing): those follow their inputs and get no device of their own. A module
 * without a catalog op (a user's leaf module) is not in the table.
 */
export function nodeVerdict(
  gm: GraphModule,
  node: Node,
  table: CapabilityTable,
  dtype: QuantDType | null,
): NodeVerdict | null {
  const match = opOfNode(gm, node);
  if (match) return opVerdict(table, match, dtype);
  if (node.op !== 'call_module') return null;
  const m = gm.getSubmodule(node.target);
  return { ok: false, reason: 'op not in table', detail: `module ${m.constructor.name} has no op in the op catalog` };
}
