// memoryProfile: how many bytes each node's output and parameters take, and the most activation
// memory alive at once when the graph runs node by node, for a float, fake-quant or fixed-point model.
import { FakeQuantize } from '@qtk/fake-quant';
import { QTensor } from '@qtk/fixed-point';
import { type GraphModule, type Node, runNodes, subAt } from '@qtk/ir';
import { Module } from '@qtk/nn';
import { InvalidArgumentError, Tensor, type TypedArray, zeros } from '@qtk/tensor';
import { argsOf, type ModelInputs } from '../values/model-inputs.js';
import { validatingFakeQuants } from '../values/node-values.js';
import { callNames, nodeTypeOf } from '../values/node-type.js';

export interface MemoryProfileOptions {
  /** Run on these inputs instead of zeros of `inputShape` (the bytes do not depend on the values). */
  readonly inputs?: ModelInputs;
}

export interface NodeMemory {
  /** Position in execution order (the output node is left out). */
  readonly index: number;
  readonly name: string;
  readonly type: string;
  /** Shape of the output (the first tensor of a tuple output); null when it holds no tensor. */
  readonly shape: readonly number[] | null;
  /** The output's type: a quantized type (qint8 / qint16 / qint32) for a fixed-point value, else its tensor dtype. */
  readonly dtype: string | null;
  /** Bytes of the storage the output newly allocates (0 when it shares an earlier value's storage, as an identity or a view does). */
  readonly activationBytes: number;
  /** Bytes of the parameters and buffers of the node's module or get_attr constant (counted at the first call of a shared module). */
  readonly paramBytes: number;
  /** Other numeric arrays the module holds (a fixed-point layer's integer bias, requantize plans, lookup tables). */
  readonly constantBytes: number;
  /** Activation bytes alive while this node runs: its output and every earlier value a later node still reads. */
  readonly liveBytes: number;
}

export interface MemoryProfileResult {
  readonly version: 1;
  readonly nodes: readonly NodeMemory[];
  /** The largest liveBytes, and the first node where it is reached. */
  readonly peakActivationBytes: number;
  readonly peakNode: string;
  /** Σ activationBytes: what running without freeing anything would hold. */
  readonly totalActivationBytes: number;
  readonly totalParamBytes: number;
  readonly totalConstantBytes: number;
}

type Shapes = readonly number[] | readonly (readonly number[])[];

function inputsFromShapes(shape: Shapes): Tensor[] {
  const shapes = (shape.length > 0 && Array.isArray(shape[0]) ? shape : [shape]) as readonly (readonly number[])[];
  return shapes.map((s) => {
    if (!s.every((d) => Number.isInteger(d) && d >= 0)) {
      throw new InvalidArgumentError(
        `memoryProfile: an input shape must list non-negative integers, got [${s.join(', ')}]`,
      );
    }
    return zeros([...s]);
  });
}

/** The storages (typed arrays) a value holds: a tensor's, a QTensor's integers', those in a tuple or object. */
function storagesOf(v: unknown, out: TypedArray[] = []): TypedArray[] {
  if (v instanceof QTensor) out.push(v.data.data);
  else if (v instanceof Tensor) out.push(v.data);
  else if (Array.isArray(v)) for (const x of v) storagesOf(x, out);
  else if (v && typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype)
    for (const x of Object.values(v)) storagesOf(x, out);
  return out;
}

function firstTensor(v: unknown): { shape: number[]; dtype: string } | null {
  if (v instanceof QTensor) return { shape: [...v.shape], dtype: v.dtype };
  if (v instanceof Tensor) return { shape: [...v.shape], dtype: v.dtype };
  const items = Array.isArray(v)
    ? v
    : v && typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype
      ? Object.values(v)
      : [];
  for (const x of items) {
    const t = firstTensor(x);
    if (t) return t;
  }
  return null;
}

/** Counts each tensor and typed array once across the whole model (shared modules, tied weights). */
class ParamCounter {
  private readonly seen = new Set<object>();

  /** Bytes of a tensor's storage the first time it is seen. */
  tensor(t: Tensor): number {
    if (this.seen.has(t.data)) return 0;
    this.seen.add(t.data);
    return t.data.byteLength;
  }

  /** Parameters and buffers of a module and its children. */
  params(m: Module): number {
    let bytes = 0;
    for (const [, p] of m.namedParameters()) bytes += this.tensor(p);
    for (const [, b] of m.namedBuffers()) bytes += this.tensor(b);
    return bytes;
  }

  /** Numeric arrays in the plain-object fields of a module and its children (depth-limited), not registered as buffers. */
  constants(m: Module): number {
    let bytes = 0;
    const walk = (v: unknown, depth: number): void => {
      if (v instanceof Tensor) bytes += this.tensor(v);
      else if (ArrayBuffer.isView(v)) {
        if (this.seen.has(v)) return;
        this.seen.add(v);
        bytes += v.byteLength;
      } else if (depth < 4 && v && typeof v === 'object') {
        const plain = Array.isArray(v) || Object.getPrototypeOf(v) === Object.prototype;
        if (plain) for (const x of Object.values(v)) walk(x, depth + 1);
      }
    };
    for (const sub of m.modules())
      for (const v of Object.values(sub)) if (!(v instanceof Module) && !(v instanceof FakeQuantize)) walk(v, 0);
    return bytes;
  }
}

/**
 * Runs `model` once on zeros of `inputShape` (one shape, or one per input; or `options.inputs`) and
 * reports each node's output bytes in its storage type (float32 4 bytes; a fixed-point int8 / int16 /
 * int32 value 1 / 2 / 4), its parameter bytes, and the activation memory alive while it runs: a
 * storage lives from the node that allocates it until the last node reading it (through any value
 * sharing it) has run. Train/eval mode and fake-quant states are restored afterwards.
 */
export function memoryProfile(
  model: GraphModule,
  inputShape: Shapes,
  options: MemoryProfileOptions = {},
): MemoryProfileResult {
  const inputs = options.inputs ? argsOf(options.inputs) : inputsFromShapes(inputShape);
  const nodes = model.graph.nodes;
  const position = new Map<Node, number>(nodes.map((n, i) => [n, i]));
  const names = callNames(model);
  const params = new ParamCounter();
  const life = new Map<TypedArray, { bytes: number; first: number; last: number }>();
  const rows: Omit<NodeMemory, 'liveBytes'>[] = [];
  const paramStorages = new Set<TypedArray>();

  const restore = validatingFakeQuants(model);
  try {
    runNodes(model, inputs, (node, value) => {
      if (node.op === 'output') return;
      const i = position.get(node)!;
      const lastUse = Math.max(i, ...node.users.map((u) => position.get(u)!));
      let paramBytes = 0;
      let constantBytes = 0;
      let activationBytes = 0;
      if (node.op === 'get_attr') {
        for (const s of storagesOf(value)) paramStorages.add(s);
        paramBytes = value instanceof Tensor ? params.tensor(value) : 0;
      } else {
        if (node.op === 'call_module') {
          const m = subAt(model, node.target);
          paramBytes = params.params(m);
          constantBytes = params.constants(m);
        }
        for (const s of new Set(storagesOf(value))) {
          if (paramStorages.has(s)) continue;
          const known = life.get(s);
          if (known) known.last = Math.max(known.last, lastUse);
          else {
            life.set(s, { bytes: s.byteLength, first: i, last: lastUse });
            activationBytes += s.byteLength;
          }
        }
      }
      const t = firstTensor(value);
      rows.push({
        index: i,
        name: names.get(node) ?? node.name,
        type: nodeTypeOf(model, node),
        shape: t?.shape ?? null,
        dtype: t?.dtype ?? null,
        activationBytes,
        paramBytes,
        constantBytes,
      });
    });
  } finally {
    restore();
  }

  // live bytes per position: each storage counts from its first to its last position
  const delta = new Float64Array(nodes.length + 1);
  for (const { bytes, first, last } of life.values()) {
    delta[first]! += bytes;
    delta[last + 1]! -= bytes;
  }
  const live = new Float64Array(nodes.length);
  for (let i = 0, acc = 0; i < nodes.length; i++) {
    acc += delta[i]!;
    live[i] = acc;
  }
  const out: NodeMemory[] = rows.map((r, k) => ({ ...r, index: k, liveBytes: live[r.index]! }));
  let peak = out[0] ?? null;
  for (const r of out) if (r.liveBytes > (peak?.liveBytes ?? -1)) peak = r;
  const sum = (f: (r: NodeMemory) => number) => out.reduce((s, r) => s + f(r), 0);
  return {
    version: 1,
    nodes: out,
    peakActivationBytes: peak?.liveBytes ?? 0,
    peakNode: peak?.name ?? '',
    totalActivationBytes: sum((r) => r.activationBytes),
    totalParamBytes: sum((r) => r.paramBytes),
    totalConstantBytes: sum((r) => r.constantBytes),
  };
}
