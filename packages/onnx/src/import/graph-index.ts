// Who produces and who reads each value of an ONNX graph, and the constants it holds (initializers,
// Constant nodes, Identity of either): what the import's pattern fusions look at before the import runs.
import type { Tensor } from '@qtk/tensor';
import type { Val } from './context.js';
import type { AttributeMsg, GraphMsg, NodeMsg } from '../onnx-schema.js';
import { constToTensor, readTensorProto } from '../tensor-proto.js';

export class GraphIndex {
  private readonly producers = new Map<string, NodeMsg>();
  private readonly users = new Map<string, NodeMsg[]>();
  private readonly outputs: Set<string>;
  private readonly constants = new Map<string, Tensor | null>();
  /** Each node's position in the graph. */
  readonly order = new Map<NodeMsg, number>();

  constructor(
    readonly graph: GraphMsg,
    private readonly initial: ReadonlyMap<string, Val>,
  ) {
    this.outputs = new Set((graph.output ?? []).map((o) => o.name ?? ''));
    (graph.node ?? []).forEach((n, i) => {
      this.order.set(n, i);
      for (const o of n.output ?? []) if (o) this.producers.set(o, n);
      for (const i of new Set(n.input ?? [])) {
        const list = this.users.get(i);
        if (list) list.push(n);
        else this.users.set(i, [n]);
      }
    });
  }

  producer(value: string): NodeMsg | undefined {
    return this.producers.get(value);
  }

  readers(value: string): readonly NodeMsg[] {
    return this.users.get(value) ?? [];
  }

  /** The only node reading `value`, when exactly one does and it is not a graph output. */
  soleReader(value: string | undefined): NodeMsg | null {
    if (!value || this.outputs.has(value)) return null;
    const u = this.readers(value);
    return u.length === 1 ? u[0]! : null;
  }

  isGraphOutput(value: string): boolean {
    return this.outputs.has(value);
  }

  /** The constant value of `name` (an initializer, a Constant node's value, an Identity of one), or null. */
  constant(name: string | undefined): Tensor | null {
    if (!name) return null;
    if (this.constants.has(name)) return this.constants.get(name)!;
    const v = this.initial.get(name);
    let t: Tensor | null = v?.kind === 'const' ? v.t : null;
    const p = v ? undefined : this.producers.get(name);
    if (p && (p.domain ?? '') === '') {
      if (p.op_type === 'Identity') t = this.constant(p.input?.[0]);
      else if (p.op_type === 'Constant') t = constantNodeValue(p);
    }
    this.constants.set(name, t);
    return t;
  }

  /** The number a one-element numeric constant holds, or null. */
  scalar(name: string | undefined): number | null {
    const t = this.constant(name);
    return t && t.size === 1 && t.dtype !== 'bool' ? Number(t.values()[0]) : null;
  }
}

function constantNodeValue(n: NodeMsg): Tensor | null {
  const a: AttributeMsg | undefined = (n.attribute ?? []).find((x) => x.name === 'value');
  if (!a?.t) return null;
  try {
    return constToTensor(readTensorProto(a.t));
  } catch {
    return null; // the importer reports a malformed constant when it reaches the node
  }
}

/** Whether `v` is `target` up to float32 rounding (two units in the last place of a float32). */
export function isConstant(v: number | null, target: number): boolean {
  return v !== null && Math.abs(v - target) <= 2 ** -22 * Math.abs(target);
}
