// Node groups the importer turns into one module, so imported graphs look like the PyTorch code they came from.
import { reshape, type Tensor } from '@qtk/tensor';
import type { Val } from './context.js';
import { matchPatterns, type PatternMatch } from './fusion-patterns.js';
import { GraphIndex } from './graph-index.js';
import type { GraphMsg, NodeMsg } from '../onnx-schema.js';

/** The per-channel vector of an Add operand shaped [C] (MatMul), or [C, 1, ...] / [1, C, 1, ...] (convolutions). */
function channelVector(b: Tensor, channels: number, spatialRank: number | null): Tensor | null {
  if (b.dtype !== 'float32' || b.size !== channels) return null;
  const dims = b.shape;
  if (spatialRank === null) return dims.length === 1 ? b : null;
  // b has `channels` elements, so the dims beside the channel dim are 1
  const perChannel =
    (dims.length === spatialRank + 1 && dims[0] === channels) ||
    (dims.length === spatialRank + 2 && dims[0] === 1 && dims[1] === channels);
  return perChannel ? reshape(b, [channels]) : null;
}

/**
 * Layers without a bias (MatMul of a constant 2-d weight, Conv, ConvTranspose) whose only consumer is an Add of a
 * constant per-output-channel vector: the Add becomes the layer's bias, as PyTorch's exporter writes it in the
 * layer and paddle2onnx (its fc and conv2d_transpose) as a separate Add. A weight or bias read through Identity
 * nodes counts as constant: PyTorch's exporter writes a parameter equal to another (the cloned layers of a freshly
 * built nn.TransformerEncoder) as an Identity of the first.
 */
export function findBiasAdds(
  g: GraphMsg,
  consts: ReadonlyMap<string, Val>,
): { bias: Map<NodeMsg, Tensor>; addOf: Map<NodeMsg, NodeMsg>; skip: Map<NodeMsg, string> } {
  const index = new GraphIndex(g, consts);
  const bias = new Map<NodeMsg, Tensor>();
  const addOf = new Map<NodeMsg, NodeMsg>();
  const skip = new Map<NodeMsg, string>();
  for (const n of g.node ?? []) {
    if ((n.domain ?? '') !== '') continue;
    const w = index.constant(n.input?.[1]);
    if (!w) continue;
    let channels: number;
    let spatialRank: number | null;
    if (n.op_type === 'MatMul' && w.ndim === 2) {
      channels = w.shape[1]!;
      spatialRank = null;
    } else if ((n.op_type === 'Conv' || n.op_type === 'ConvTranspose') && w.ndim >= 3 && !n.input?.[2]) {
      const group = Number(n.attribute?.find((a) => a.name === 'group')?.i ?? 1);
      channels = n.op_type === 'Conv' ? w.shape[0]! : w.shape[1]! * group;
      spatialRank = w.ndim - 2;
    } else continue;
    const out = n.output?.[0] ?? '';
    const add = index.soleReader(out);
    if (add?.op_type !== 'Add' || (add.domain ?? '') !== '' || add.input?.length !== 2) continue;
    const other = add.input[0] === out ? add.input[1] : add.input[0];
    const b = other === out ? null : index.constant(other);
    const vector = b && channelVector(b, channels, spatialRank);
    if (!vector) continue;
    bias.set(n, vector);
    addOf.set(n, add);
    skip.set(add, out);
  }
  return { bias, addOf, skip };
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
