import { traceables } from '@qtk/tensor';
import { GraphError } from './errors.js';
import type { Graph } from './graph.js';

/** What a node does, as in torch.fx. */
export type Opcode = 'placeholder' | 'get_attr' | 'call_module' | 'call_function' | 'call_method' | 'output';

export const OPCODES: readonly Opcode[] = [
  'placeholder',
  'get_attr',
  'call_module',
  'call_function',
  'call_method',
  'output',
];

/**
 * A node argument: a `Node`, a constant (number, string, boolean, null, undefined, ...), or arrays
 * and plain objects nesting them.
 */
export type Argument = unknown;

function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (typeof v !== 'object' || v === null) return false;
  const p = Object.getPrototypeOf(v);
  return p === Object.prototype || p === null;
}

/** Copies `arg`, replacing every node inside arrays and plain objects with `fn(node)`. */
export function mapArg(arg: Argument, fn: (node: Node) => Argument): Argument {
  if (arg instanceof Node) return fn(arg);
  if (Array.isArray(arg)) return arg.map((a) => mapArg(a, fn));
  if (isPlainObject(arg)) {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(arg)) out[k] = mapArg(arg[k], fn);
    return out;
  }
  return arg;
}

/** Calls `fn` on every node inside `arg` (in order, repeats included). */
export function forEachNode(arg: Argument, fn: (node: Node) => void): void {
  if (arg instanceof Node) fn(arg);
  else if (Array.isArray(arg)) for (const a of arg) forEachNode(a, fn);
  else if (isPlainObject(arg)) for (const k of Object.keys(arg)) forEachNode(arg[k], fn);
}

/**
 * One operation of a `Graph`. `target` is a string so graphs serialize: the qualified module path
 * (call_module, get_attr), the registered function name (call_function), the method name
 * (call_method), the parameter name (placeholder), or 'output'. A call_module node with `method`
 * set calls that method of the module instead of `forward` (FloatFunctional's `add`, a method
 * wrapped with fxWrap). JS has no keyword arguments: a non-empty `kwargs` is passed as one trailing
 * options object.
 */
export class Node {
  readonly graph: Graph;
  readonly op: Opcode;
  /** Free-form annotations for passes (not serialized unless JSON-safe under `meta.json`). */
  meta: Record<string, unknown> = {};
  /** Qualified path of the module whose forward created this node while tracing ('' for the root). */
  scope = '';
  private _name: string;
  private _target: string;
  private _method: string | undefined;
  private _args: readonly Argument[] = [];
  private _kwargs: Readonly<Record<string, Argument>> = {};
  private _inputs: Node[] = [];
  private readonly _users = new Set<Node>();
  /** @internal */ _prev: Node | null = null;
  /** @internal */ _next: Node | null = null;
  /** @internal */ _erased = false;

  /** @internal Use the Graph's creation methods. */
  constructor(graph: Graph, name: string, op: Opcode, target: string, method: string | undefined) {
    this.graph = graph;
    this._name = name;
    this.op = op;
    this._target = target;
    this._method = method;
  }

  get name(): string {
    return this._name;
  }

  /** Renames the node (names stay unique within the graph). */
  set name(next: string) {
    this.graph._rename(this, next);
  }

  /** @internal */ _setName(next: string): void {
    this._name = next;
  }

  get target(): string {
    return this._target;
  }

  set target(next: string) {
    if (typeof next !== 'string')
      throw new GraphError(`node ${this._name}: target must be a string, got ${typeof next}`);
    this._target = next;
    this.graph._touch();
  }

  /** For call_module: the method called instead of forward (undefined means forward). */
  get method(): string | undefined {
    return this._method;
  }

  set method(next: string | undefined) {
    if (this.op !== 'call_module' && next !== undefined)
      throw new GraphError(`node ${this._name}: only call_module nodes have a method`);
    this._method = next;
    this.graph._touch();
  }

  get args(): readonly Argument[] {
    return this._args;
  }

  set args(next: readonly Argument[]) {
    if (!Array.isArray(next)) throw new GraphError(`node ${this._name}: args must be an array`);
    this._args = Object.freeze([...next]);
    this.refreshInputs();
  }

  get kwargs(): Readonly<Record<string, Argument>> {
    return this._kwargs;
  }

  set kwargs(next: Readonly<Record<string, Argument>>) {
    if (!isPlainObject(next)) throw new GraphError(`node ${this._name}: kwargs must be a plain object`);
    this._kwargs = Object.freeze({ ...next });
    this.refreshInputs();
  }

  /** Replaces `args[index]`. */
  updateArg(index: number, value: Argument): void {
    if (!Number.isInteger(index) || index < 0 || index >= this._args.length) {
      throw new GraphError(`node ${this._name}: updateArg index ${index} out of range (0..${this._args.length - 1})`);
    }
    const a = [...this._args];
    a[index] = value;
    this.args = a;
  }

  updateKwarg(key: string, value: Argument): void {
    this.kwargs = { ...this._kwargs, [key]: value };
  }

  /** Distinct nodes this node reads, in order of first appearance in args then kwargs. */
  get inputNodes(): readonly Node[] {
    return this._inputs;
  }

  /** Distinct nodes that read this node, in the order they started reading it. */
  get users(): Node[] {
    return [...this._users];
  }

  get numUsers(): number {
    return this._users.size;
  }

  /** The next node in graph order, or null at the end. */
  get next(): Node | null {
    return this._next;
  }

  get prev(): Node | null {
    return this._prev;
  }

  /** True once erased from its graph. */
  get erased(): boolean {
    return this._erased;
  }

  /**
   * Makes every user read `replacement` instead of this node (the replacement itself is skipped, so
   * a node inserted after this one and reading it keeps doing so). Returns the users changed.
   */
  replaceAllUsesWith(replacement: Argument, options: { filter?: (user: Node) => boolean } = {}): Node[] {
    if (replacement instanceof Node && replacement.graph !== this.graph) {
      throw new GraphError(`replaceAllUsesWith: ${replacement.name} belongs to another graph than ${this._name}`);
    }
    const changed: Node[] = [];
    for (const user of [...this._users]) {
      if (user === replacement) continue;
      if (options.filter && !options.filter(user)) continue;
      user.replaceInputWith(this, replacement);
      changed.push(user);
    }
    return changed;
  }

  /** Replaces every occurrence of `old` in this node's args and kwargs. */
  replaceInputWith(old: Node, replacement: Argument): void {
    const sub = (n: Node): Argument => (n === old ? replacement : n);
    this._args = Object.freeze(this._args.map((a) => mapArg(a, sub)));
    this._kwargs = Object.freeze(mapArg(this._kwargs, sub) as Record<string, Argument>);
    this.refreshInputs();
  }

  /** Moves (or inserts) `node` right before this one. */
  prepend(node: Node): void {
    this.graph._move(node, this, false);
  }

  /** Moves (or inserts) `node` right after this one. */
  append(node: Node): void {
    this.graph._move(node, this, true);
  }

  /**
   * Whether dead-code elimination must keep the node even without users: placeholders, the output,
   * impure registered functions (random draws, dropout) and nodes marked `meta.impure`.
   */
  isImpure(): boolean {
    if (this.op === 'placeholder' || this.op === 'output') return true;
    if (this.meta.impure === true) return true;
    if (this.op === 'call_function' && traceables.has(this._target)) return traceables.get(this._target).impure;
    return false;
  }

  /** One line in torch.fx's node format, e.g. `%conv : [#users=1] = call_module[target=conv](args = (%x,), kwargs = {})`. */
  format(): string {
    const t = this.op === 'call_module' && this._method ? `${this._target || 'self'}.${this._method}` : this._target;
    const args = formatRef(this._args);
    const kwargs = formatRef(this._kwargs);
    return `%${this._name} : [#users=${this._users.size}] = ${this.op}[target=${t}](args = ${args}, kwargs = ${kwargs})`;
  }

  toString(): string {
    return this._name;
  }

  /** @internal Drops this node from its inputs' user sets (used by erase). */
  _detachInputs(): void {
    for (const n of this._inputs) n._users.delete(this);
    this._inputs = [];
  }

  private refreshInputs(): void {
    const next: Node[] = [];
    const seen = new Set<Node>();
    const visit = (n: Node) => {
      if (seen.has(n)) return;
      if (n.graph !== this.graph)
        throw new GraphError(`node ${this._name}: argument ${n.name} belongs to another graph`);
      if (n._erased) throw new GraphError(`node ${this._name}: argument ${n.name} was erased from the graph`);
      seen.add(n);
      next.push(n);
    };
    for (const a of this._args) forEachNode(a, visit);
    forEachNode(this._kwargs, visit);
    for (const n of this._inputs) if (!seen.has(n)) n._users.delete(this);
    for (const n of next) n._users.add(this);
    this._inputs = next;
    this.graph._touch();
  }
}

function formatRef(arg: Argument): string {
  if (arg instanceof Node) return `%${arg.name}`;
  if (Array.isArray(arg)) return arg.length === 1 ? `(${formatRef(arg[0])},)` : `(${arg.map(formatRef).join(', ')})`;
  if (isPlainObject(arg))
    return `{${Object.keys(arg)
      .map((k) => `${k}: ${formatRef(arg[k])}`)
      .join(', ')}}`;
  return typeof arg === 'string' ? `'${arg}'` : String(arg);
}
