import { type GraphModule, type Node, subAt } from '@qtk/ir';

/** What a node runs, for tables: the module class (a QAT wrapper as `QAT(Conv2d…)`), or the function / method name. */
export function nodeTypeOf(gm: GraphModule, node: Node): string {
  if (node.op === 'placeholder') return 'input';
  if (node.op !== 'call_module') return node.target;
  const m = subAt(gm, node.target) as { constructor: { name: string }; module?: { constructor: { name: string } } };
  const inner = m.constructor.name === 'QatModule' && m.module ? m.module.constructor.name : null;
  const base = inner ? `QAT(${inner})` : m.constructor.name;
  return node.method ? `${base}.${node.method}` : base;
}

/**
 * Display names for nodes in execution order: the module path (node name for functions), with `(i)`
 * on the i-th repeated call of a shared module (horizon_plugin_pytorch's convention).
 */
export function callNames(gm: GraphModule): Map<Node, string> {
  const seen = new Map<string, number>();
  const names = new Map<Node, string>();
  for (const n of gm.graph.nodes) {
    const base = n.op === 'call_module' ? n.target + (n.method ? `.${n.method}` : '') : n.name;
    const k = seen.get(base) ?? 0;
    seen.set(base, k + 1);
    names.set(n, k === 0 ? base : `${base}(${k})`);
  }
  return names;
}
