import { Module } from '@qtk/nn';
import { InvalidArgumentError, type Tensor } from '@qtk/tensor';
import { compileGraph, type CompiledGraph, type ModuleResolver } from './compile.js';
import { GraphError } from './errors.js';
import { Graph } from './graph.js';
import type { JsonValue } from './module-codecs.js';
import { findSubmodule } from './find-submodule.js';

export interface GraphModuleOptions {
  /** Name of the traced model's class (shown when printing; kept in serialized form). */
  className?: string;
  /** Tensors the graph reads by name that are not parameters or buffers of the root (registered as buffers). */
  constants?: ReadonlyMap<string, Tensor>;
  /**
   * The object that serves `this` for root-level fxWrap-ed methods; default: `root` (its own root
   * object when `root` is a GraphModule). A converted model built on an empty root passes the QAT model's.
   */
  rootObject?: Module | null;
}

/**
 * Groups submodules without running them: intermediate modules created by `addSubmodule('a.b', m)`,
 * and traced-through modules rebuilt by deserialization (which keeps their class name in `originalType`).
 */
export class SubmoduleContainer extends Module {
  constructor(readonly originalType: string | null = null) {
    super();
  }

  forward(): never {
    throw new GraphError(
      `SubmoduleContainer${this.originalType ? ` (for a ${this.originalType})` : ''} only groups submodules of a GraphModule; it has no forward`,
    );
  }
}

// Compiled programs and graph ownership live outside the instance so that deepCopy(graphModule),
// which copies own fields, gives the copy its own graph (cloned on first use) and program.
const programs = new WeakMap<GraphModule, { graph: Graph; version: number; program: CompiledGraph }>();
const graphOwners = new WeakMap<Graph, GraphModule>();

const RESERVED = new Set([
  'graph',
  '_graph',
  '_root',
  'className',
  'training',
  'forward',
  'call',
  'recompile',
  'printTabular',
  'inputNames',
  'rootObject',
  'meta',
]);
const resolvers = new WeakMap<GraphModule, ModuleResolver>();

/**
 * A Module that runs a Graph, after torch.fx's GraphModule. It holds the traced model's children
 * (the same instances, under the same names), the root's own parameters and buffers, and the
 * trace's constants, so its state dict has the model's keys. Autograd works through it as through
 * the eager model. After editing `graph`, the next call recompiles (or call `recompile()`).
 */
export class GraphModule extends Module {
  readonly className: string;
  private _graph: Graph;
  /**
   * JSON facts about the whole model, kept by deepCopy and serializeGraphModule. QTK records
   * `kind` ('qat', 'fixed-point') and `march` here (prepareQatFx, convertFx); the model file reads them.
   */
  declare meta: Record<string, JsonValue>;

  constructor(root: Module, graph: Graph, options: GraphModuleOptions = {}) {
    super();
    if (!(root instanceof Module)) throw new InvalidArgumentError('GraphModule: root must be a Module');
    if (!(graph instanceof Graph)) throw new InvalidArgumentError('GraphModule: graph must be a Graph');
    this.className = options.className ?? (root instanceof GraphModule ? root.className : root.constructor.name);
    this._graph = graph;
    graphOwners.set(graph, this);
    for (const [name, child] of root.namedChildren()) {
      if (RESERVED.has(name))
        throw new InvalidArgumentError(
          `GraphModule: the model has a child named '${name}', a name GraphModule uses itself; rename it`,
        );
      this.registerModule(name, child);
    }
    for (const [name, p] of root.ownParameters()) this.registerParameter(name, p);
    for (const [name, b, persistent] of root.ownBuffers()) this.registerBuffer(name, b, persistent);
    for (const [name, t] of options.constants ?? []) this.registerBuffer(name, t, true);
    this.training = root.training;
    // non-enumerable, so it is not taken for an attribute of the model
    Object.defineProperty(this, 'meta', { value: {}, enumerable: false, writable: true, configurable: true });
    // The original root serves `this` of root-level fxWrap-ed methods; non-enumerable, so not a child.
    Object.defineProperty(this, '_root', {
      value:
        options.rootObject !== undefined ? options.rootObject : root instanceof GraphModule ? root.rootObject : root,
      enumerable: false,
      writable: true,
      configurable: true,
    });
  }

  /** The graph; a deep copy of this module gets its own copy of it on first access. */
  get graph(): Graph {
    if (graphOwners.get(this._graph) !== this) {
      this._graph = this._graph.clone().graph;
      graphOwners.set(this._graph, this);
    }
    return this._graph;
  }

  set graph(next: Graph) {
    if (!(next instanceof Graph)) throw new InvalidArgumentError('GraphModule.graph: expected a Graph');
    this._graph = next;
    graphOwners.set(next, this);
  }

  /** The traced model object (serves `this` for root-level fxWrap-ed methods), or null after deserialization without one. */
  get rootObject(): Module | null {
    return (this as unknown as { _root: Module | null })._root;
  }

  /** Runs the graph. Inputs are the graph's placeholders in order. */
  // biome-ignore lint/suspicious/noExplicitAny: forward's signature is each model's own, so the base type cannot be narrower
  forward(...inputs: unknown[]): any {
    return this.program().run(this.resolver(), inputs);
  }

  /** Validates and compiles the graph now (otherwise done on the first call after an edit). */
  recompile(): void {
    const graph = this.graph;
    graph.validate();
    const program = compileGraph(graph);
    programs.set(this, { graph, version: graph.version, program });
  }

  /** The graph as an FX-layout table. */
  printTabular(): string {
    return this.graph.printTabular();
  }

  /** Names of the graph inputs, in call order. */
  get inputNames(): readonly string[] {
    return this.program().inputNames;
  }

  /**
   * Adds `module` at a dotted path, creating missing intermediate modules (SubmoduleContainer).
   * Replaces whatever was at the path.
   */
  addSubmodule(path: string, module: Module): void {
    const parts = path.split('.');
    this.ownerAt(parts).registerModule(parts[parts.length - 1]!, module);
  }

  /** Registers `tensor` as a buffer at a dotted path, creating missing intermediate modules as addSubmodule does. */
  addBuffer(path: string, tensor: Tensor): void {
    const parts = path.split('.');
    this.ownerAt(parts).registerBuffer(parts[parts.length - 1]!, tensor);
  }

  /** The module that holds the last of `parts`, made with SubmoduleContainers where missing. */
  private ownerAt(parts: readonly string[]): Module {
    let owner: Module = this;
    for (const p of parts.slice(0, -1)) {
      let next = owner.getChild(p);
      if (!next) {
        next = new SubmoduleContainer();
        owner.registerModule(p, next);
      }
      owner = next;
    }
    return owner;
  }

  /** Removes the module at a dotted path; returns whether there was one. */
  deleteSubmodule(path: string): boolean {
    const dot = path.lastIndexOf('.');
    const owner = dot < 0 ? this : findSubmodule(this, path.slice(0, dot));
    if (!owner) return false;
    const name = path.slice(dot + 1);
    if (!owner.getChild(name)) return false;
    owner.setChild(name, null);
    if ((owner as unknown as Record<string, unknown>)[name] === null)
      delete (owner as unknown as Record<string, unknown>)[name];
    return true;
  }

  /**
   * Adds `module` as a direct child named `_generated_<kind>_<k>` (the first free k) and returns
   * the name; fusion uses it for modules that stand for functional calls (`_generated_add_0`).
   */
  addGeneratedSubmodule(kind: string, module: Module): string {
    let k = 0;
    while (this.getChild(`_generated_${kind}_${k}`)) k++;
    const name = `_generated_${kind}_${k}`;
    this.registerModule(name, module);
    return name;
  }

  override toString(): string {
    return `${super.toString().replace(/^GraphModule/, `GraphModule<${this.className}>`)}\n\n${this.printTabular()}`;
  }

  private program(): CompiledGraph {
    const graph = this.graph;
    let p = programs.get(this);
    if (!p || p.graph !== graph || p.version !== graph.version) {
      this.recompile();
      p = programs.get(this)!;
    }
    return p.program;
  }

  private resolver(): ModuleResolver {
    let r = resolvers.get(this);
    if (!r) {
      r = this.makeResolver();
      resolvers.set(this, r);
    }
    return r;
  }

  private makeResolver(): ModuleResolver {
    return {
      moduleAt: (parts, forMethod) => {
        if (parts.length === 0 && forMethod) return this.rootFacade();
        let m: Module = this;
        for (const p of parts) {
          const c = m.getChild(p);
          if (!c)
            throw new GraphError(`GraphModule: no submodule '${parts.join('.')}' (missing '${p}'); the graph calls it`);
          m = c;
        }
        return m;
      },
      attrAt: (parts) => {
        let owner: Module = this;
        for (const p of parts.slice(0, -1)) {
          const c = owner.getChild(p);
          if (!c)
            throw new GraphError(
              `GraphModule: no submodule '${parts.slice(0, -1).join('.')}' for get_attr '${parts.join('.')}'`,
            );
          owner = c;
        }
        const last = parts[parts.length - 1]!;
        const child = owner.getChild(last);
        if (child) return child;
        const v = (owner as unknown as Record<string, unknown>)[last];
        if (v === undefined) throw new GraphError(`GraphModule: get_attr '${parts.join('.')}' found nothing`);
        return v;
      },
    };
  }

  /**
   * `this` for methods of the traced root recorded by fxWrap: the original model object, except
   * that its children and `training` are this GraphModule's (so swapped or reconfigured modules
   * and train()/eval() apply inside the wrapped code).
   */
  private rootFacade(): Record<string, unknown> {
    const root = this.rootObject;
    if (!root) {
      throw new GraphError(
        `GraphModule<${this.className}>: the graph calls a method of the root model, but this GraphModule has no root object; ` +
          'deserialize it with { root: new Model(...) }',
      );
    }
    return new Proxy(root as unknown as Record<string, unknown>, {
      get: (t, p, receiver) => {
        if (p === 'training') return this.training;
        if (typeof p === 'string') {
          const c = this.getChild(p);
          if (c) return c;
        }
        return Reflect.get(t, p, receiver);
      },
    });
  }
}
