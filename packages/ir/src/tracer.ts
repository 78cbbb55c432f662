import { Module, setModuleCallInterceptor, type ModuleCallInterceptor } from '@qtk/nn';
import { InvalidArgumentError, isTracedValue, setTraceHook, Tensor, traceable, type TraceHook } from '@qtk/tensor';
import { TraceError } from './errors.js';
import { Graph } from './graph.js';
import { GraphModule } from './graph-module.js';
import { leafModules, tracedMethodsOf, type ModuleClass } from './leaf-modules.js';
import type { Node } from './node.js';
import { createProxy, proxyInfo, type ProxyHost } from './proxy.js';
import { parseParams } from './signature.js';

/** `obj[key]` for a property name, recorded for `x.shape`, `data.img`, ... */
export const getattr = traceable(
  'getattr',
  (obj: unknown, key: string): unknown => (obj as Record<string, unknown>)[key],
);
/** `obj[index]`, recorded for `x.shape[0]`, array destructuring of a traced value, ... */
export const getitem = traceable(
  'getitem',
  (obj: unknown, index: number): unknown => (obj as Record<number, unknown>)[index],
);

export interface TraceOptions {
  /**
   * Values for forward's parameters, by name, fixed at trace time: they are not graph inputs, and
   * branches on them are resolved during the trace.
   */
  concreteArgs?: Record<string, unknown>;
  /** Extra leaf modules: classes (instances and subclasses' instances) or qualified module paths. */
  leafModules?: readonly (ModuleClass | string)[];
  /** Final say on leaves: gets the module, its path and the default decision. */
  isLeafModule?: (module: Module, path: string, byDefault: boolean) => boolean;
  /**
   * Names of the graph inputs, passed to forward positionally. Needed when forward takes rest
   * parameters; also makes parameters with default values inputs (otherwise their defaults apply).
   */
  inputNames?: readonly string[];
}

export interface TraceResult {
  graph: Graph;
  /** Tensors created during the trace and read by the graph (`_tensor_constant0`, ...). */
  constants: Map<string, Tensor>;
}

let activeTracer: Tracer | null = null;

/** Marks an error thrown inside a traced-through module with that module's path and class. */
const FAILED_IN = Symbol('qtk.traceFailedIn');

/** The tracer currently running, if any (fxWrap-ed methods ask it to record themselves). */
export function currentTracer(): Tracer | null {
  return activeTracer;
}

const INTERNAL_FRAME =
  /[\\/](?:packages[\\/](?:ir|tensor|nn)[\\/](?:src|dist)|node_modules[\\/]@qtk[\\/](?:ir|tensor|nn))[\\/]/;

/** `file:line:column` of the innermost stack frame outside QTK's own ir/tensor/nn sources. */
function userLocation(): string | null {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 50;
  const stack = new Error().stack ?? '';
  Error.stackTraceLimit = limit;
  for (const raw of stack.split('\n').slice(1)) {
    const m = /\(?((?:file:\/\/)?[^()\s]+):(\d+):(\d+)\)?\s*$/.exec(raw.trim());
    if (!m) continue;
    const file = m[1]!;
    if (file.startsWith('node:')) continue;
    if (INTERNAL_FRAME.test(file) && !/\.test\.[cm]?[jt]s$/.test(file)) continue;
    return `${file}:${m[2]}:${m[3]}`;
  }
  return null;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (typeof v !== 'object' || v === null) return false;
  const p = Object.getPrototypeOf(v);
  return p === Object.prototype || p === null;
}

/**
 * Records one forward pass of a module into a Graph, after torch.fx's Tracer. Use
 * `symbolicTrace` unless you need the raw graph.
 */
export class Tracer implements ProxyHost {
  private graph = new Graph();
  private readonly constants = new Map<string, Tensor>();
  private readonly constantNodes = new Map<Tensor, string>();
  private readonly attrNodes = new Map<string, Node>();
  private moduleToPath = new Map<Module, string>();
  private tensorToPath = new Map<Tensor, string>();
  private scopes: { path: string; type: string }[] = [];

  constructor(private readonly options: TraceOptions = {}) {}

  trace(root: Module): TraceResult {
    if (!(root instanceof Module))
      throw new InvalidArgumentError(`symbolicTrace: expected a Module, got ${typeof root}`);
    this.graph = new Graph();
    this.moduleToPath = new Map(root.namedModules().map(([p, m]) => [m, p] as [Module, string]));
    this.tensorToPath = new Map<Tensor, string>();
    for (const [p, t] of root.namedParameters()) this.tensorToPath.set(t, p);
    for (const [p, t] of root.namedBuffers()) if (!this.tensorToPath.has(t)) this.tensorToPath.set(t, p);
    this.scopes = [{ path: '', type: root.constructor.name }];

    const inputs = this.makeInputs(root);
    const restore = this.shadowTracedMethods(root);
    const hook: TraceHook = (name, _fn, args) => this.recordFunction(name, args);
    const interceptor: ModuleCallInterceptor = (m, args, proceed) => this.onModuleCall(m, args, proceed);
    const prevHook = setTraceHook(hook);
    const prevInterceptor = setModuleCallInterceptor(interceptor);
    const prevTracer = activeTracer;
    activeTracer = this;
    try {
      const out = root.forward(...inputs);
      this.graph.output(this.toArg(out));
    } catch (e) {
      if (e instanceof TraceError) throw e;
      const at = (e as { [FAILED_IN]?: { path: string; type: string } })?.[FAILED_IN] ?? this.scopes[0]!;
      const what = e instanceof Error ? `${e.name}: ${e.message}` : String(e);
      throw new TraceError(
        `forward threw while tracing (${what})`,
        { modulePath: at.path, moduleType: at.type, location: null },
        {
          cause: e,
          hint: 'Code that needs real values (not traced ones) can be wrapped with fxWrap(fn), or its module made a leaf with the leafModules option.',
        },
      );
    } finally {
      activeTracer = prevTracer;
      setModuleCallInterceptor(prevInterceptor);
      setTraceHook(prevHook);
      restore();
    }
    this.graph.validate();
    return { graph: this.graph, constants: this.constants };
  }

  // ---- recording ----------------------------------------------------------------------------

  recordFunction(name: string, args: unknown[]): unknown {
    const node = this.graph.callFunction(
      name,
      args.map((a) => this.toArg(a)),
      {},
      { scope: this.scope.path },
    );
    return createProxy(this, node);
  }

  recordMethod(self: Node, name: string, args: unknown[]): unknown {
    const node = this.graph.callMethod(name, [self, ...args.map((a) => this.toArg(a))], {}, { scope: this.scope.path });
    return createProxy(this, node);
  }

  recordAttribute(self: Node, key: string | number): unknown {
    const fn = typeof key === 'number' ? 'getitem' : 'getattr';
    const node = this.graph.callFunction(fn, [self, key], {}, { scope: this.scope.path });
    return createProxy(this, node);
  }

  /** Records `module[method](...args)` as a call_module node with that method (FloatFunctional ops, fxWrap-ed methods). */
  recordModuleMethod(module: Module, method: string, args: unknown[], options: { opaque?: boolean } = {}): unknown {
    const path = this.moduleToPath.get(module);
    if (path === undefined) {
      throw this.error(
        `${module.constructor.name}.${method}() was called on a module that is not part of the traced model`,
        'Assign the module to a field of the model (or registerModule) so the graph can address it by name.',
      );
    }
    const node = this.graph.callModule(
      path,
      args.map((a) => this.toArg(a)),
      {},
      { method, scope: this.scope.path },
    );
    if (options.opaque) node.meta.impure = true;
    return createProxy(this, node);
  }

  traceError(self: Node, what: string, hint?: string): Error {
    return this.error(`${what} (the value of node '${self.name}', ${self.op} ${self.target})`, hint);
  }

  private error(problem: string, hint?: string): TraceError {
    return new TraceError(
      problem,
      { modulePath: this.scope.path, moduleType: this.scope.type, location: userLocation() },
      hint === undefined ? {} : { hint },
    );
  }

  private get scope(): { path: string; type: string } {
    return this.scopes[this.scopes.length - 1]!;
  }

  private onModuleCall(module: Module, args: unknown[], proceed: (args: unknown[]) => unknown): unknown {
    const path = this.moduleToPath.get(module);
    if (!this.isLeaf(module, path ?? '')) {
      this.scopes.push({ path: path ?? this.scope.path, type: module.constructor.name });
      try {
        return proceed(args);
      } catch (e) {
        if (typeof e === 'object' && e !== null && !(FAILED_IN in e))
          Object.defineProperty(e, FAILED_IN, { value: { ...this.scope } });
        throw e;
      } finally {
        this.scopes.pop();
      }
    }
    if (path === undefined) {
      throw this.error(
        `a ${module.constructor.name} was called that is not a submodule of the traced model`,
        'Assign it to a field of the model (or registerModule) so the graph can address it by name.',
      );
    }
    const node = this.graph.callModule(
      path,
      args.map((a) => this.toArg(a)),
      {},
      { scope: this.scope.path },
    );
    return createProxy(this, node);
  }

  private isLeaf(module: Module, path: string): boolean {
    let leaf = leafModules.isLeaf(module);
    for (const l of this.options.leafModules ?? []) {
      if (typeof l === 'string' ? l === path : module instanceof l) leaf = true;
    }
    if (this.options.isLeafModule) leaf = this.options.isLeafModule(module, path, leaf);
    return leaf;
  }

  /** A node argument for a value met during the trace. */
  private toArg(v: unknown): unknown {
    if (isTracedValue(v)) {
      const info = proxyInfo(v);
      if (!info || info.host !== this) throw this.error('a traced value from another trace was used');
      return info.node;
    }
    if (v instanceof Tensor) return this.tensorNode(v);
    if (v instanceof Module) {
      const path = this.moduleToPath.get(v);
      if (path === undefined)
        throw this.error(`a ${v.constructor.name} that is not part of the traced model was passed to an op`);
      return this.attrNode(path);
    }
    if (Array.isArray(v)) return v.map((x) => this.toArg(x));
    if (isPlainObject(v)) {
      const out: Record<string, unknown> = {};
      for (const k of Object.keys(v)) out[k] = this.toArg(v[k]);
      return out;
    }
    return v;
  }

  private tensorNode(t: Tensor): Node {
    const path = this.tensorToPath.get(t);
    if (path !== undefined) return this.attrNode(path);
    let name = this.constantNodes.get(t);
    if (name === undefined) {
      name = `_tensor_constant${this.constants.size}`;
      this.constants.set(name, t);
      this.constantNodes.set(t, name);
    }
    return this.attrNode(name);
  }

  private attrNode(path: string): Node {
    let n = this.attrNodes.get(path);
    if (!n) {
      n = this.graph.getAttr(path, { scope: this.scope.path });
      this.attrNodes.set(path, n);
    }
    return n;
  }

  // ---- setup --------------------------------------------------------------------------------

  private makeInputs(root: Module): unknown[] {
    const concrete = this.options.concreteArgs ?? {};
    const forward = root.forward as (...a: unknown[]) => unknown;
    const inputNames = this.options.inputNames ?? (root instanceof GraphModule ? root.inputNames : undefined);
    if (inputNames) {
      if (Object.keys(concrete).length)
        throw new InvalidArgumentError('symbolicTrace: pass either inputNames or concreteArgs, not both');
      return inputNames.map((n) => createProxy(this, this.graph.placeholder(n)));
    }
    const params = parseParams(forward);
    if (params === null) {
      throw new InvalidArgumentError(
        `symbolicTrace: cannot read the parameters of ${root.constructor.name}.forward; pass inputNames`,
      );
    }
    const names = new Set(params.map((p) => p.name));
    for (const k of Object.keys(concrete)) {
      if (!names.has(k)) {
        throw new InvalidArgumentError(
          `symbolicTrace: concreteArgs has '${k}', but ${root.constructor.name}.forward takes (${params.map((p) => p.name ?? '{…}').join(', ')})`,
        );
      }
    }
    return params.map((p, i) => {
      if (p.rest) {
        throw new InvalidArgumentError(
          `symbolicTrace: ${root.constructor.name}.forward takes rest parameters; pass inputNames to say how many inputs it gets`,
        );
      }
      if (p.name !== null && p.name in concrete) return concrete[p.name];
      if (p.hasDefault) return undefined;
      return createProxy(this, this.graph.placeholder(p.name ?? `input_${i}`));
    });
  }

  /** Replaces the traced methods (FloatFunctional.add, ...) of every module with recorders; returns the undo. */
  private shadowTracedMethods(root: Module): () => void {
    const undo: (() => void)[] = [];
    for (const m of root.modules()) {
      for (const method of tracedMethodsOf(m)) {
        const own = Object.getOwnPropertyDescriptor(m, method);
        Object.defineProperty(m, method, {
          value: (...args: unknown[]) => this.recordModuleMethod(m, method, args),
          configurable: true,
          writable: true,
          enumerable: false,
        });
        undo.push(() => {
          if (own) Object.defineProperty(m, method, own);
          else delete (m as unknown as Record<string, unknown>)[method];
        });
      }
    }
    return () => {
      for (const u of undo.reverse()) u();
    };
  }
}

/** The graph of `root`'s forward, without building a GraphModule. */
export function traceGraph(root: Module, options: TraceOptions = {}): TraceResult {
  return new Tracer(options).trace(root);
}
