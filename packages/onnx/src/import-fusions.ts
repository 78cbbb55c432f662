// Node groups the importer turns into one module, so imported graphs look like the PyTorch code they came from.
import type { Tensor } from '@qtk/tensor';
import type { Val } from './import-context.js';
import { matchPatterns, type PatternMatch } from './fusion-patterns.js';
import { GraphIndex } from './graph-index.js';
import type { GraphMsg, NodeMsg } from './onnx-schema.js';

function consumers(g: GraphMsg): Map<string, NodeMsg[]> {
  const users = new Map<string, NodeMsg[]>();
  for (const n of g.node ?? []) {
    for (const i of n.input ?? []) {
      const list = users.get(i);
      if (list) list.push(n);
      else users.set(i, [n]);
    }
  }
  return users;
}

/**
 * MatMul nodes whose only consumer is an Add of a constant bias vector: the pair becomes one Linear.
 * A weight or bias read through Identity nodes counts as constant: PyTorch's exporter writes a parameter equal to
 * another (the cloned layers of a freshly built nn.TransformerEncoder) as an Identity of the first.
 */
export function findMatMulAdds(
  g: GraphMsg,
  consts: Map<string, Val>,
): { bias: Map<NodeMsg, Tensor>; skip: Map<NodeMsg, string> } {
  const users = consumers(g);
  const identitySource = new Map<string, string>();
  for (const n of g.node ?? [])
    if (n.op_type === 'Identity' && (n.domain ?? '') === '' && n.input?.[0] && n.output?.[0])
      identitySource.set(n.output[0], n.input[0]);
  const constAt = (name: string): Val | undefined => {
    for (let k = 0; !consts.has(name) && identitySource.has(name) && k < identitySource.size; k++)
      name = identitySource.get(name)!;
    return consts.get(name);
  };
  const outputs = new Set((g.output ?? []).map((o) => o.name));
  const bias = new Map<NodeMsg, Tensor>();
  const skip = new Map<NodeMsg, string>();
  for (const n of g.node ?? []) {
    if (n.op_type !== 'MatMul' || (n.domain ?? '') !== '') continue;
    const w = constAt(n.input?.[1] ?? '');
    const out = n.output?.[0] ?? '';
    const u = users.get(out) ?? [];
    if (w?.kind !== 'const' || w.t.ndim !== 2 || u.length !== 1 || outputs.has(out)) continue;
    const add = u[0]!;
    if (add.op_type !== 'Add') continue;
    const other = add.input?.[0] === out ? add.input?.[1] : add.input?.[0];
    const b = constAt(other ?? '');
    if (b?.kind !== 'const' || b.t.ndim !== 1 || b.t.shape[0] !== w.t.shape[1] || b.t.dtype !== 'float32') continue;
    bias.set(n, b.t);
    skip.set(add, out);
  }
  return { bias, skip };
}

/** The patterns the import turns into modules, by the first of their nodes in the graph (where the module is called). */
export interface ModuleFusions {
  /** The pattern starting at each node. */
  heads: Map<NodeMsg, PatternMatch>;
  /** Every node of every pattern. */
  members: Set<NodeMsg>;
}

export function findModuleFusions(g: GraphMsg, consts: ReadonlyMap<string, Val>): ModuleFusions {
  const index = new GraphIndex(g, consts);
  const heads = new Map<NodeMsg, PatternMatch>();
  const members = new Set<NodeMsg>();
  for (const m of matchPatterns(index)) {
    const head = m.nodes.reduce((a, b) => (index.order.get(b)! < index.order.get(a)! ? b : a));
    heads.set(head, m);
    for (const n of m.nodes) members.add(n);
  }
  return { heads, members };
}
