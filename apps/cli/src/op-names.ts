import { findSubmodule, type GraphModule, type Node } from '@qtk/ir';
import type { Module } from '@qtk/nn';
import { opOfNode } from '@qtk/spec';

/** The op a node's module or function stands for, with the attributes the capability tables constrain. */
export interface NodeOp {
  /** Module class, function or method name, as the graph shows it. */
  readonly label: string;
  /** Capability-table op name. */
  readonly op: string;
  readonly attrs: Record<string, unknown>;
}

function moduleAt(gm: GraphModule, node: Node): Module | null {
  return findSubmodule(gm, node.target);
}

function capitalise(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}

/**
 * Maps a node of an imported (float) graph to its capability-table op (QTK's op catalog); null for
 * placeholders, outputs, constants. A node the catalog has no op for is reported under its class
 * or function name, so the report still names it.
 */
export function nodeOp(gm: GraphModule, node: Node): NodeOp | null {
  if (node.op === 'placeholder' || node.op === 'output' || node.op === 'get_attr') return null;
  const found = opOfNode(gm, node);
  if (node.op === 'call_module') {
    const cls = moduleAt(gm, node)?.constructor.name ?? node.target;
    const label = node.method ? `${cls}.${node.method}` : cls;
    return {
      label,
      op: found?.op ?? (node.method ? capitalise(node.method) : cls),
      attrs: { ...(found?.attrs ?? {}) },
    };
  }
  const label = node.op === 'call_method' ? `Tensor.${node.target}` : node.target;
  if (found) return { label, op: found.op, attrs: { ...found.attrs } };
  // an item of split's output list: the split is the op
  if (node.target === 'getitem') return { label, op: 'Split', attrs: {} };
  return { label, op: capitalise(node.target.slice(node.target.lastIndexOf('.') + 1)), attrs: {} };
}
