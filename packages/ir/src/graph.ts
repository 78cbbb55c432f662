import { traceables } from '@qtk/tensor';
import { GraphError, GraphValidationError } from './errors.js';
import { tabulateNodes } from './format.js';
import { forEachNode, mapArg, Node, OPCODES, type Argument, type Opcode } from './node.js';

export interface CreateNodeOptions {
  /** Preferred name; made unique with a `_1`, `_2`, ... suffix when taken. Derived from the target when absent. */
  name?: string;
  /** call_module only: call this method instead of forward. */
  method?: string;
  /** Module path recorded as the node's scope. */
  scope?: string;
}

/** A valid identifier from any text (non-identifier characters become '_'). */
export function sanitizeName(text: string): string {
  let s = text.replace(/[^A-Za-z0-9_$]/g, '_');
  if (s === '' || /^[0-9]/.test(s)) s = `_${s}`;
  return s;
}

function defaultName(op: Opcode, target: string, method: string | undefined): string {
  switch (op) {
    case 'output':
      return 'output';
    case 'call_module':
      if (method) return target === '' ? method : `${target}_${method}`;
      return target;
    default:
      return target;
  }
}

/**
 * A doubly linked list of nodes in execution order, after torch.fx's Graph. Nodes are created at the
 * insertion point (the end, unless inside `insertingBefore` / `insertingAfter`), names are unique
 * and stable, and every edit bumps `version` so a GraphModule knows to recompile.
 */
export class Graph {
  private _first: Node | null = null;
  private _last: Node | null = null;
  private _length = 0;
  private readonly _names = new Map<string, Node>();
  private _insert: { node: Node; after: boolean } | null = null;
  private _version = 0;

  /** Incremented by every change of nodes, order, args or targets. */
  get version(): number {
    return this._version;
  }

  /** @internal */ _touch(): void {
    this._version++;
  }

  get length(): number {
    return this._length;
  }

  /** A snapshot of the nodes in order (safe to edit the graph while iterating it). */
  get nodes(): Node[] {
    const out: Node[] = [];
    for (let n = this._first; n !== null; n = n._next) out.push(n);
    return out;
  }

  [Symbol.iterator](): Iterator<Node> {
    return this.nodes[Symbol.iterator]();
  }

  get first(): Node | null {
    return this._first;
  }

  get last(): Node | null {
    return this._last;
  }

  /** The node called `name`, if any. */
  node(name: string): Node | undefined {
    return this._names.get(name);
  }

  /** Nodes with the given opcode and (optionally) target. */
  findNodes(query: { op?: Opcode; target?: string; method?: string }): Node[] {
    return this.nodes.filter(
      (n) =>
        (query.op === undefined || n.op === query.op) &&
        (query.target === undefined || n.target === query.target) &&
        (query.method === undefined || n.method === query.method),
    );
  }

  get placeholders(): Node[] {
    return this.findNodes({ op: 'placeholder' });
  }

  /** The output node, if the graph has one. */
  get outputNode(): Node | undefined {
    return this._last?.op === 'output' ? this._last : this.findNodes({ op: 'output' })[0];
  }

  // ---- creation -----------------------------------------------------------------------------

  createNode(
    op: Opcode,
    target: string,
    args: readonly Argument[] = [],
    kwargs: Record<string, Argument> = {},
    options: CreateNodeOptions = {},
  ): Node {
    if (!OPCODES.includes(op))
      throw new GraphError(`createNode: unknown opcode '${op}'; expected one of ${OPCODES.join(', ')}`);
    if (typeof target !== 'string')
      throw new GraphError(`createNode(${op}): target must be a string, got ${typeof target}`);
    if (options.method !== undefined && op !== 'call_module')
      throw new GraphError(`createNode(${op}): only call_module nodes take a method`);
    if (op === 'output' && this.outputNode)
      throw new GraphError(`createNode: the graph already has an output node (${this.outputNode.name})`);
    const name = this.uniqueName(options.name ?? defaultName(op, target, options.method));
    const node = new Node(this, name, op, target, options.method);
    if (options.scope !== undefined) node.scope = options.scope;
    try {
      node.args = args;
      node.kwargs = kwargs;
    } catch (e) {
      node._detachInputs();
      throw e;
    }
    this._names.set(name, node);
    this.link(node);
    return node;
  }

  placeholder(name: string, options: Omit<CreateNodeOptions, 'method'> = {}): Node {
    return this.createNode('placeholder', name, [], {}, options);
  }

  /** Reads a parameter, buffer, constant or submodule by qualified path. */
  getAttr(target: string, options: Omit<CreateNodeOptions, 'method'> = {}): Node {
    return this.createNode('get_attr', target, [], {}, options);
  }

  callModule(
    target: string,
    args: readonly Argument[] = [],
    kwargs: Record<string, Argument> = {},
    options: CreateNodeOptions = {},
  ): Node {
    return this.createNode('call_module', target, args, kwargs, options);
  }

  /** Calls a registered function, given by name or as the function itself (see registerTraceable). */
  callFunction(
    // biome-ignore lint/suspicious/noExplicitAny: any[] parameters accept functions of every signature and still allow calling them (never[] would not)
    fn: string | ((...a: any[]) => unknown),
    args: readonly Argument[] = [],
    kwargs: Record<string, Argument> = {},
    options: Omit<CreateNodeOptions, 'method'> = {},
  ): Node {
    let target: string;
    if (typeof fn === 'string') target = traceables.get(fn).name;
    else {
      const e = traceables.lookup(fn);
      if (!e)
        throw new GraphError(
          `callFunction: ${fn.name || 'this function'} is not registered; register it with registerTraceable('name', fn) or fxWrap(fn, 'name') first`,
        );
      target = e.name;
    }
    return this.createNode('call_function', target, args, kwargs, options);
  }

  /** Calls `args[0][name](...args.slice(1))`. */
  callMethod(
    name: string,
    args: readonly Argument[] = [],
    kwargs: Record<string, Argument> = {},
    options: Omit<CreateNodeOptions, 'method'> = {},
  ): Node {
    if (args.length === 0)
      throw new GraphError(`callMethod('${name}'): args[0] must be the object whose method is called`);
    return this.createNode('call_method', name, args, kwargs, options);
  }

  /** The graph's result: `value` may nest nodes in arrays and plain objects. */
  output(value: Argument): Node {
    return this.createNode('output', 'output', [value]);
  }

  /** Runs `fn` with new nodes created right before `node`, in creation order. Returns what `fn` returns. */
  insertingBefore<T>(node: Node, fn: () => T): T {
    return this.withInsertPoint({ node: this.own(node, 'insertingBefore'), after: false }, fn);
  }

  /** Runs `fn` with new nodes created right after `node`, in creation order (unlike FX, whose successive inserts reverse). */
  insertingAfter<T>(node: Node, fn: () => T): T {
    return this.withInsertPoint({ node: this.own(node, 'insertingAfter'), after: true }, fn);
  }

  // ---- removal ------------------------------------------------------------------------------

  /** Removes a node that nothing uses any more. */
  eraseNode(node: Node): void {
    this.own(node, 'eraseNode');
    if (node.numUsers > 0) {
      throw new GraphError(
        `eraseNode: ${node.name} is still used by ${node.users.map((u) => u.name).join(', ')}; replace those uses first (node.replaceAllUsesWith(other))`,
      );
    }
    node._detachInputs();
    this.unlink(node);
    this._names.delete(node.name);
    node._erased = true;
    this._version++;
  }

  /**
   * Erases nodes whose results nobody uses and that have no side effects (see Node.isImpure), last
   * to first so chains of dead nodes go at once. Returns whether anything was erased.
   */
  eliminateDeadCode(isImpure: (node: Node) => boolean = (n) => n.isImpure()): boolean {
    let changed = false;
    for (let n = this._last; n !== null; ) {
      const prev = n._prev;
      if (n.numUsers === 0 && !isImpure(n)) {
        this.eraseNode(n);
        changed = true;
      }
      n = prev;
    }
    return changed;
  }

  // ---- checks and printing ------------------------------------------------------------------

  /**
   * Checks the invariants: inputs of every node come earlier in this graph (topological order), no
   * node reads an erased node or one of another graph, names are unique and user lists agree, at
   * most one output and it is last. Throws GraphValidationError listing every problem.
   */
  validate(): void {
    const problems: string[] = [];
    const seen = new Set<Node>();
    const names = new Set<string>();
    let outputs = 0;
    for (let n = this._first; n !== null; n = n._next) {
      if (names.has(n.name)) problems.push(`duplicate node name '${n.name}'`);
      names.add(n.name);
      if (this._names.get(n.name) !== n) problems.push(`node '${n.name}' is not registered under its name`);
      const check = (a: Node) => {
        if (a.graph !== this) problems.push(`${n.name} reads ${a.name} of another graph`);
        else if (a._erased) problems.push(`${n.name} reads erased node ${a.name}`);
        else if (!seen.has(a)) problems.push(`${n.name} reads ${a.name}, which comes later (not topological order)`);
        if (!a.users.includes(n)) problems.push(`${a.name} does not list ${n.name} among its users`);
      };
      for (const a of n.args) forEachNode(a, check);
      forEachNode(n.kwargs, check);
      if (n.op === 'output') {
        outputs++;
        if (n._next !== null) problems.push(`output node '${n.name}' is not the last node`);
      }
      if ((n.op === 'call_module' || n.op === 'get_attr') && typeof n.target !== 'string')
        problems.push(`${n.name}: target must be a string`);
      if (n.op === 'call_function' && !traceables.has(n.target))
        problems.push(`${n.name}: call_function target '${n.target}' is not a registered function`);
      if (n.op === 'call_method' && n.args.length === 0)
        problems.push(`${n.name}: call_method without a self argument`);
      seen.add(n);
    }
    if (outputs > 1) problems.push(`${outputs} output nodes (at most one)`);
    if (seen.size !== this._length) problems.push(`length ${this._length} disagrees with ${seen.size} linked nodes`);
    if (problems.length) throw new GraphValidationError(problems);
  }

  /** The FX-layout table (opcode, name, target, args, kwargs). */
  printTabular(): string {
    return tabulateNodes(this);
  }

  toString(): string {
    return ['graph():', ...this.nodes.map((n) => `    ${n.format()}`)].join('\n');
  }

  /**
   * A copy of this graph (new nodes, same names and targets); `map` takes each old node to its copy.
   * Argument values other than nodes are shared, not cloned.
   */
  clone(): { graph: Graph; map: Map<Node, Node> } {
    const g = new Graph();
    const map = new Map<Node, Node>();
    for (const n of this.nodes) map.set(n, g.copyNode(n, map));
    return { graph: g, map };
  }

  /** Creates a copy of `node` (possibly of another graph) at the insertion point, mapping its input nodes through `map`. */
  copyNode(node: Node, map: Map<Node, Node> | ((n: Node) => Argument)): Node {
    const f =
      typeof map === 'function'
        ? map
        : (n: Node) => {
            const m = map.get(n);
            if (!m) throw new GraphError(`copyNode(${node.name}): input ${n.name} has no copy yet`);
            return m;
          };
    const copy = this.createNode(
      node.op,
      node.target,
      node.args.map((a) => mapArg(a, f)),
      mapArg(node.kwargs, f) as Record<string, Argument>,
      { name: node.name, method: node.method, scope: node.scope },
    );
    copy.meta = { ...node.meta };
    return copy;
  }

  /** A name not yet used in this graph, derived from `candidate`. */
  uniqueName(candidate: string): string {
    const name = sanitizeName(candidate);
    if (!this._names.has(name)) return name;
    const m = /^(.*)_(\d+)$/.exec(name);
    const base = m ? m[1]! : name;
    let k = 1;
    while (this._names.has(`${base}_${k}`)) k++;
    return `${base}_${k}`;
  }

  // ---- internals ----------------------------------------------------------------------------

  /** @internal */ _rename(node: Node, next: string): void {
    this.own(node, 'rename');
    if (next === node.name) return;
    if (sanitizeName(next) !== next) throw new GraphError(`rename ${node.name}: '${next}' is not an identifier`);
    if (this._names.has(next)) throw new GraphError(`rename ${node.name}: the name '${next}' is taken`);
    this._names.delete(node.name);
    this._names.set(next, node);
    node._setName(next);
    this._version++;
  }

  /** @internal */ _move(node: Node, anchor: Node, after: boolean): void {
    this.own(node, 'move');
    this.own(anchor, 'move');
    if (node === anchor) return;
    this.unlink(node);
    this.linkAt(node, anchor, after);
    this._version++;
  }

  private own(node: Node, what: string): Node {
    if (node.graph !== this) throw new GraphError(`${what}: node ${node.name} belongs to another graph`);
    if (node._erased) throw new GraphError(`${what}: node ${node.name} was erased`);
    return node;
  }

  private withInsertPoint<T>(point: { node: Node; after: boolean }, fn: () => T): T {
    const prev = this._insert;
    this._insert = point;
    try {
      return fn();
    } finally {
      this._insert = prev;
    }
  }

  private link(node: Node): void {
    const ip = this._insert;
    if (ip === null) {
      if (this._last) this.linkAt(node, this._last, true);
      else {
        this._first = this._last = node;
        this._length++;
      }
      return;
    }
    this.linkAt(node, ip.node, ip.after);
    if (ip.after) ip.node = node;
  }

  private linkAt(node: Node, anchor: Node, after: boolean): void {
    if (after) {
      node._prev = anchor;
      node._next = anchor._next;
      if (anchor._next) anchor._next._prev = node;
      else this._last = node;
      anchor._next = node;
    } else {
      node._next = anchor;
      node._prev = anchor._prev;
      if (anchor._prev) anchor._prev._next = node;
      else this._first = node;
      anchor._prev = node;
    }
    this._length++;
    this._version++;
  }

  private unlink(node: Node): void {
    if (node._prev) node._prev._next = node._next;
    else this._first = node._next;
    if (node._next) node._next._prev = node._prev;
    else this._last = node._prev;
    node._prev = node._next = null;
    this._length--;
  }
}
