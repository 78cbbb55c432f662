// Whether a march runs a node on the BPU. A march with a supportsNode hook answers with its
// converter's own decision (the rule, the table op it converts the node as, its dtype, attributes
// and fusions), so the partition, the checks and the device tables can never claim what conversion
// refuses. A march without the hook is judged by its capability table: the catalog op (and, for a
// fused module, each part), at the dtype its qconfig asks for, with its attributes; the first
// failing check names the reason ("not in the table" before "dtype" before "attribute constraint").
import { type DeployReason, QatModule } from '@qtk/core';
import { findSubmodule, type GraphModule, type Node } from '@qtk/ir';
import type { Module } from '@qtk/nn';
import {
  checkOpSupport,
  opOfNode,
  type CapabilityTable,
  type MarchBackendV1,
  type OpMatch,
  type QuantDType,
} from '@qtk/spec';

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

/** The float (or fused) module a converter rule sees: a QAT module's wrapped module. */
function moduleAt(gm: GraphModule, node: Node): Module | null {
  if (node.op !== 'call_module') return null;
  const m = findSubmodule(gm, node.target);
  return m instanceof QatModule ? m.module : m;
}

/**
 * The verdict for a node on `march`, or null when the catalog has no op for a function or method call
 * (shape queries, tuple indexing): those follow their inputs and get no device of their own. A module
 * without a catalog op (a user's leaf module) is not in the table.
 */
export function nodeVerdict(
  gm: GraphModule,
  node: Node,
  march: MarchBackendV1,
  dtype: QuantDType | null,
): NodeVerdict | null {
  const match = opOfNode(gm, node);
  if (!match) {
    if (node.op !== 'call_module') return null;
    const m = gm.getSubmodule(node.target);
    return { ok: false, reason: 'op not in table', detail: `module ${m.constructor.name} has no op in the op catalog` };
  }
  const supports = march.hooks.supportsNode;
  if (!supports) return opVerdict(march.capabilities, match, dtype);
  const v = supports.call(march.hooks, {
    march: march.id,
    node,
    module: moduleAt(gm, node),
    op: match.op,
    attrs: match.attrs,
    fused: match.fused ?? null,
    dtype,
  });
  return v.ok ? SUPPORTED : { ok: false, reason: v.reason, detail: v.detail };
}
