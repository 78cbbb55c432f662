import { Graph, getitem, IMPORTED_NAMES, sanitizeName, type Argument, type Node } from '@qtk/ir';
import type { Module } from '@qtk/nn';
import type { Tensor } from '@qtk/tensor';
import { OnnxError, OnnxFormatError } from '../errors.js';
import { BatchProbe } from './batch-probe.js';
import { ImportLimits } from './limits.js';
import { DataType, type AttributeMsg, type NodeMsg } from '../onnx-schema.js';
import { isIntType, readTensorProto, type OnnxConst } from '../tensor-proto.js';

/**
 * A value during import: a constant (folded at import time) or a graph node. Every node also carries
 * its value on the example inputs, which gives static shapes to the importer. `sym` marks 1-d shape
 * vectors whose entries are computed from the dynamic batch (null); `batch` says where the batch came from.
 */
export type Val =
  | { kind: 'const'; t: Tensor; sym?: (number | null)[]; batch?: BatchSource }
  | { kind: 'dyn'; node: Node; ex: Tensor; dynBatch: boolean };

/**
 * The dynamic value a shape vector's symbolic entries were read from: at run time, an entry that equals
 * `size` at import is `node`'s dim `axis` (an op that cannot take a symbolic shape through its input reads it there).
 */
export interface BatchSource {
  readonly node: Node;
  /** Its value at import. */
  readonly ex: Tensor;
  readonly axis: number;
  readonly size: number;
}

export type Attrs = Map<string, AttributeMsg>;

const decoder = new TextDecoder();

export class NodeContext {
  constructor(
    readonly imp: ImportState,
    readonly node: NodeMsg,
    readonly name: string,
    readonly opset: number,
    readonly attrs: Attrs,
    readonly inputs: (Val | null)[],
  ) {}

  get opType(): string {
    return this.node.op_type ?? '';
  }

  input(i: number): Val {
    const v = this.inputs[i];
    if (!v) throw new OnnxError(`${this.opType} '${this.name}': input ${i} is required`);
    return v;
  }

  has(i: number): boolean {
    return !!this.inputs[i];
  }

  int(name: string, def: number): number {
    const a = this.attrs.get(name);
    return a?.i !== undefined ? Number(a.i) : def;
  }

  float(name: string, def: number): number {
    const a = this.attrs.get(name);
    return a?.f !== undefined ? a.f : def;
  }

  ints(name: string): number[] | null {
    const a = this.attrs.get(name);
    return a ? (a.ints ?? []).map(Number) : null;
  }

  floats(name: string): number[] | null {
    const a = this.attrs.get(name);
    return a ? (a.floats ?? []) : null;
  }

  str(name: string, def: string): string {
    const a = this.attrs.get(name);
    return a?.s ? decoder.decode(a.s) : def;
  }

  tensorAttr(name: string): OnnxConst | null {
    const a = this.attrs.get(name);
    return a?.t ? readTensorProto(a.t) : null;
  }

  /** The numbers of a constant input (or null when absent); throws when the input is computed at run time. */
  constInts(i: number, what: string): number[] | null {
    const v = this.inputs[i];
    if (!v) return null;
    if (v.kind !== 'const')
      throw new Unsupported(`${what} (input ${i}) must be a constant (initializer or foldable subgraph)`);
    return Array.from(v.t.values() as ArrayLike<number>, Number);
  }

  isConst(i: number): boolean {
    return this.inputs[i]?.kind === 'const';
  }

  /** Example (or constant) value of input i. */
  ex(i: number): Tensor {
    const v = this.input(i);
    return v.kind === 'const' ? v.t : v.ex;
  }

  /** Throws OnnxLimitError, naming this node, when a tensor of `shape` would exceed the import's cap. */
  limit(shape: readonly number[], kind?: string): void {
    this.imp.limits.check(`${this.opType} '${this.name}'`, shape, kind);
  }

  /** Counts `macs` multiply-adds this node is about to run against the import's budget. */
  work(macs: number): void {
    this.imp.limits.work(`${this.opType} '${this.name}'`, macs);
  }

  /** Calls a registered function: folded when every value argument is constant, else a call_function node. */
  // biome-ignore lint/suspicious/noExplicitAny: any[] parameters accept functions of every signature and still allow calling them (never[] would not)
  fn(fn: (...a: any[]) => Tensor | Tensor[], args: unknown[], suffix = ''): Val {
    return this.imp.call(fn, args, this.name + suffix);
  }

  /** Adds `module` under this node's name and calls it. */
  module(module: Module, args: Val[]): Val {
    return this.imp.callModule(this.name, module, args);
  }
}

/** Thrown by an op handler for a node it cannot express; the importer collects them all. */
export class Unsupported extends Error {}

function containsDyn(a: unknown): boolean {
  if (Array.isArray(a)) return a.some(containsDyn);
  return isVal(a) && a.kind === 'dyn';
}

function isVal(a: unknown): a is Val {
  return (
    typeof a === 'object' && a !== null && 'kind' in a && ((a as Val).kind === 'const' || (a as Val).kind === 'dyn')
  );
}

export class ImportState {
  /**
   * `isMember(name)`: whether `name` is a property of the GraphModule the import builds (a method, a
   * field or an Object.prototype name like __proto__); names from the file that are get a trailing '_'.
   */
  constructor(
    readonly limits: ImportLimits = new ImportLimits(Infinity),
    private readonly isMember: (name: string) => boolean = () => false,
  ) {
    this.probe = new BatchProbe(() => this.graph.nodes, this.modules, this.constants, limits.maxElements);
  }

  readonly graph = new Graph();
  /** The ONNX names of the node being imported; the graph nodes made for it record them (IMPORTED_NAMES). */
  importedNames: string[] = [];
  readonly modules = new Map<string, Module>();
  readonly constants = new Map<string, Tensor>();
  /** Bias vectors of MatMul / Conv / ConvTranspose nodes fused with the Add that follows them (findBiasAdds). */
  fusedBias = new Map<NodeMsg, Tensor>();
  /** The graph run again one sample longer, to tell which dims follow the batch. */
  readonly probe: BatchProbe;
  /** Receives what the import accepts but must tell the user (importOnnx's onWarning). */
  warn: (message: string) => void = () => {};
  private readonly constNodes = new Map<Tensor, Node>();

  uniqueModuleName(base: string): string {
    let name = sanitizeName(base);
    while (this.isMember(name)) name = `${name}_`;
    if (this.modules.has(name) || this.constants.has(name)) {
      let k = 1;
      while (this.modules.has(`${name}_${k}`) || this.constants.has(`${name}_${k}`)) k++;
      name = `${name}_${k}`;
    }
    return name;
  }

  /** A get_attr node reading a constant tensor (registered once as a buffer of the GraphModule). */
  constNode(t: Tensor, base: string): Node {
    let n = this.constNodes.get(t);
    if (!n) {
      const name = this.uniqueModuleName(`${base}_const`);
      this.constants.set(name, t);
      n = this.graph.getAttr(name, { name });
      this.constNodes.set(t, n);
    }
    return n;
  }

  private toArg(a: unknown, base: string): Argument {
    if (Array.isArray(a)) return a.map((x) => this.toArg(x, base)) as Argument;
    if (isVal(a)) return a.kind === 'dyn' ? a.node : this.constNode(a.t, base);
    return a as Argument;
  }

  private toEx(a: unknown): unknown {
    if (Array.isArray(a)) return a.map((x) => this.toEx(x));
    if (isVal(a)) return a.kind === 'dyn' ? a.ex : a.t;
    return a;
  }

  private stamp(node: Node): Node {
    if (this.importedNames.length) node.meta[IMPORTED_NAMES] = [...this.importedNames];
    return node;
  }

  private dynBatch(args: unknown[]): boolean {
    return args.some((a) => (Array.isArray(a) ? this.dynBatch(a) : isVal(a) && a.kind === 'dyn' && a.dynBatch));
  }

  // biome-ignore lint/suspicious/noExplicitAny: any[] parameters accept functions of every signature and still allow calling them (never[] would not)
  call(fn: (...a: any[]) => Tensor | Tensor[], args: unknown[], name: string): Val {
    const ex = fn(...args.map((a) => this.toEx(a)));
    if (Array.isArray(ex)) throw new OnnxError(`internal: ${name} returned several tensors; use callMulti`);
    this.limits.spend(`node '${name}'`, ex.shape);
    if (!containsDyn(args)) return { kind: 'const', t: ex };
    const node = this.stamp(
      this.graph.callFunction(
        fn,
        args.map((a) => this.toArg(a, name)),
        {},
        { name: sanitizeName(name) },
      ),
    );
    return { kind: 'dyn', node, ex, dynBatch: this.dynBatch(args) };
  }

  // biome-ignore lint/suspicious/noExplicitAny: any[] parameters accept functions of every signature and still allow calling them (never[] would not)
  callMulti(fn: (...a: any[]) => Tensor[], args: unknown[], name: string): Val[] {
    const ex = fn(...args.map((a) => this.toEx(a)));
    for (const t of ex) this.limits.spend(`node '${name}'`, t.shape);
    if (!containsDyn(args)) return ex.map((t) => ({ kind: 'const', t }));
    const node = this.stamp(
      this.graph.callFunction(
        fn,
        args.map((a) => this.toArg(a, name)),
        {},
        { name: sanitizeName(name) },
      ),
    );
    const dynBatch = this.dynBatch(args);
    return ex.map((t, i) => ({
      kind: 'dyn',
      node: this.stamp(this.graph.callFunction(getitem, [node, i], {}, { name: sanitizeName(`${name}_${i}`) })),
      ex: t,
      dynBatch,
    }));
  }

  callModule(base: string, module: Module, args: Val[]): Val {
    module.eval();
    // A module on constants is a constant subgraph: fold it.
    if (!containsDyn(args)) {
      const t = module.call(...args.map((a) => this.toEx(a))) as Tensor;
      this.limits.spend(`node '${base}'`, t.shape);
      return { kind: 'const', t };
    }
    checkFinite(base, module);
    const name = this.uniqueModuleName(base);
    this.modules.set(name, module);
    const exArgs = args.map((a) => this.toEx(a));
    const ex = module.call(...exArgs) as Tensor;
    this.limits.spend(`node '${base}'`, ex.shape);
    const node = this.stamp(
      this.graph.callModule(
        name,
        args.map((a) => this.toArg(a, name)),
        {},
        { name },
      ),
    );
    return { kind: 'dyn', node, ex, dynBatch: this.dynBatch(args) };
  }
}

/** Weights must be finite: a NaN or infinity in them only makes every output and every quantization range NaN. */
function checkFinite(node: string, module: Module): void {
  for (const [what, t] of [...module.namedParameters(), ...module.namedBuffers()]) {
    if (t.dtype !== 'float32') continue;
    const v = t.values() as Float32Array;
    for (let i = 0; i < v.length; i++) {
      if (!Number.isFinite(v[i]!)) {
        throw new OnnxFormatError(
          `importOnnx: node '${node}': its ${what} (from the model's initializers) holds a non-finite value ${v[i]} at index ${i}; the weights are corrupt`,
        );
      }
    }
  }
}

/**
 * The QTK dtype for an ONNX element type: float32 for float, double and float16, int32 for the 8- to 64-bit
 * integers, bool; null for the types QTK does not compute in (string, complex, bfloat16, the float8 types of
 * opset 19, int4 / uint4 of opset 21), whose values float32 or int32 would not reproduce.
 */
export function qtkDType(dt: number): 'float32' | 'int32' | 'bool' | null {
  if (dt === DataType.BOOL) return 'bool';
  if (dt === DataType.FLOAT || dt === DataType.DOUBLE || dt === DataType.FLOAT16) return 'float32';
  return isIntType(dt) ? 'int32' : null; // bool is handled above
}
