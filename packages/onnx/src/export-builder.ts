import { Tensor } from '@qtk/tensor';
import { AttrType, DataType, type AttributeMsg, type NodeMsg, type TensorMsg } from './onnx-schema.js';
import { int64Proto, tensorToProto } from './tensor-proto.js';

export type AttrValue = number | number[] | string | { float: number } | { floats: number[] } | { tensor: Tensor };

const encoder = new TextEncoder();

function attribute(name: string, v: AttrValue): AttributeMsg {
  if (typeof v === 'string') return { name, type: AttrType.STRING, s: encoder.encode(v) };
  if (typeof v === 'number') return { name, type: AttrType.INT, i: v };
  if (Array.isArray(v)) return { name, type: AttrType.INTS, ints: v };
  if ('tensor' in v) {
    const t = v.tensor;
    const proto =
      t.dtype === 'bool'
        ? { dims: [...t.shape], data_type: DataType.BOOL, raw_data: Uint8Array.from(t.values() as Uint8Array) }
        : tensorToProto('', t);
    return { name, type: AttrType.TENSOR, t: proto };
  }
  if ('float' in v) return { name, type: AttrType.FLOAT, f: v.float };
  return { name, type: AttrType.FLOATS, floats: v.floats };
}

/** Collects ONNX nodes and initializers with unique value names. */
export class OnnxBuilder {
  readonly nodes: NodeMsg[] = [];
  readonly initializers: TensorMsg[] = [];
  private readonly taken = new Set<string>();
  private readonly tensorNames = new Map<Tensor, string>();
  private readonly nodeNames = new Set<string>();

  constructor(readonly opset: number) {}

  unique(base: string): string {
    let name = base;
    let k = 1;
    while (this.taken.has(name)) name = `${base}_${k++}`;
    this.taken.add(name);
    return name;
  }

  reserve(name: string): void {
    this.taken.add(name);
  }

  /** Adds one node; returns its output names (fresh names derived from `name` unless given). */
  node(
    opType: string,
    inputs: string[],
    name: string,
    attrs: Record<string, AttrValue | undefined> = {},
    outputs: string[] | number = 1,
  ): string[] {
    const outs =
      typeof outputs === 'number'
        ? Array.from({ length: outputs }, (_, i) => this.unique(outputs === 1 ? name : `${name}_${i}`))
        : outputs;
    const attribute_ = Object.entries(attrs)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => attribute(k, v!));
    // Node names are the FX node names (helper nodes get a suffix), so an import names modules as the source did.
    let nodeName = name;
    for (let k = 1; this.nodeNames.has(nodeName); k++) nodeName = `${name}_${k}`;
    this.nodeNames.add(nodeName);
    this.nodes.push({ op_type: opType, name: nodeName, input: inputs, output: outs, attribute: attribute_ });
    return outs;
  }

  /** An initializer holding `t` (the same tensor object twice gives one initializer). */
  tensor(t: Tensor, name: string): string {
    const known = this.tensorNames.get(t);
    if (known) return known;
    const n = this.unique(name);
    this.initializers.push(tensorToProto(n, t));
    this.tensorNames.set(t, n);
    return n;
  }

  floatConst(values: number[], name: string, shape: number[] = [values.length]): string {
    const n = this.unique(name);
    this.initializers.push(tensorToProto(n, new Tensor({ data: Float32Array.from(values), shape, dtype: 'float32' })));
    return n;
  }

  intConst(values: number[], name: string, shape: number[] = [values.length]): string {
    const n = this.unique(name);
    this.initializers.push(int64Proto(n, values, shape));
    return n;
  }
}
