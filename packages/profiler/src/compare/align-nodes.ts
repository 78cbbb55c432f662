// Pairs the nodes of two versions of one model (float, fused, calibrated, QAT, fixed point) that
// compute the same value: by node name in execution order, looking through fusion (a fused node
// stands for the last node of the float chain it absorbed) and moduleized functions (an add that
// became `layer1._generated_add_0` still knows it was `add`).
import type { GraphModule, Node } from '@qtk/ir';
import { nodeNameOf } from '../values/node-values.js';

export interface AlignedPair {
  /** The name shown for the pair: the second model's node name (module path for a module call). */
  readonly name: string;
  readonly first: Node;
  readonly second: Node;
}

const ALIGNABLE = new Set(['placeholder', 'call_module', 'call_function', 'call_method']);

/** Every name a node answers to: its own, the nodes fusion folded into it, the traced node it replaced. */
export function aliasesOf(node: Node): string[] {
  const names = [node.name];
  const fused = node.meta.fusedFrom;
  if (Array.isArray(fused)) for (const n of fused) if (typeof n === 'string') names.push(n);
  const source = node.meta.sourceName;
  if (typeof source === 'string') names.push(source);
  return names;
}

/**
 * The pairs (first-model node, second-model node) that compute the same value, in the second model's
 * execution order. A second-model node is paired with the last node, in execution order, of the first
 * model whose aliases it shares (the output of a chain fused into it). Nodes without a partner (fake-quants
 * the first model lacks, a chain's inner nodes) are left out.
 */
export function alignNodes(first: GraphModule, second: GraphModule): AlignedPair[] {
  const firstNodes = first.graph.nodes.filter((n) => ALIGNABLE.has(n.op));
  const byAlias = new Map<string, number>();
  firstNodes.forEach((n, i) => {
    for (const a of aliasesOf(n)) byAlias.set(a, Math.max(byAlias.get(a) ?? -1, i));
  });
  const pairs: AlignedPair[] = [];
  const used = new Set<Node>();
  for (const node of second.graph.nodes) {
    if (!ALIGNABLE.has(node.op)) continue;
    let best = -1;
    for (const a of aliasesOf(node)) best = Math.max(best, byAlias.get(a) ?? -1);
    if (best < 0) continue;
    const partner = firstNodes[best]!;
    if (used.has(partner)) continue;
    used.add(partner);
    pairs.push({ name: nodeNameOf(node), first: partner, second: node });
  }
  return pairs;
}
