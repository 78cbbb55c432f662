import type { GraphModule } from '@qtk/ir';
import type { Module } from '@qtk/nn';
import { Tensor } from '@qtk/tensor';

/**
 * The tensors the graph reads with get_attr (a class token, a position embedding, a trace's
 * constants) are copied to the converted model at their own paths: it starts without children, so
 * otherwise it would fail at run time with "get_attr found nothing". A path whose owner is a
 * converted module that holds the tensor already (a copied float module) needs nothing.
 */
export function copyTensorAttributes(qatModel: GraphModule, out: GraphModule): void {
  for (const node of out.graph.nodes) {
    if (node.op !== 'get_attr') continue;
    const parts = node.target.split('.');
    const value = attributeAt(qatModel, parts);
    if (!(value instanceof Tensor) || attributeAt(out, parts) !== undefined) continue;
    out.addBuffer(node.target, value.clone());
  }
}

function attributeAt(root: Module, parts: readonly string[]): unknown {
  let owner: Module | null = root;
  for (const p of parts.slice(0, -1)) owner = owner?.getChild(p) ?? null;
  return owner ? (owner as unknown as Record<string, unknown>)[parts[parts.length - 1]!] : undefined;
}
