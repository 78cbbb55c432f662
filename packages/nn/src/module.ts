import { InvalidArgumentError, Tensor } from '@qtk/tensor';
import { StateDictError } from './errors.js';
import { Parameter } from './parameter.js';
import {
  collectStateDict,
  loadIntoModule,
  type JsonValue,
  type LoadStateDictOptions,
  type LoadStateDictResult,
  type StateDict,
} from './state-dict.js';

/** Runs before `forward`; return an array to replace the arguments. */
// biome-ignore lint/suspicious/noConfusingVoidType: a hook that keeps the arguments may simply end without a return
export type ForwardPreHook = (module: Module, args: unknown[]) => unknown[] | void;
/** Runs after `forward`; return a value to replace the output. */
export type ForwardHook = (module: Module, args: unknown[], output: unknown) => unknown;

export interface RemovableHandle {
  readonly id: number;
  remove(): void;
}

/**
 * Sees every `Module.call` while installed (symbolic tracing in @qtk/ir uses it to record leaf
 * modules). `proceed` runs the call as usual (hooks and forward) with the given arguments.
 */
export type ModuleCallInterceptor = (module: Module, args: unknown[], proceed: (args: unknown[]) => unknown) => unknown;

let nextHookId = 0;
let callDepth = 0;
let forwardPassCounter = 0;
let interceptor: ModuleCallInterceptor | null = null;

/** Installs (or with null removes) the module-call interceptor; returns the previous one so tracers can nest. */
export function setModuleCallInterceptor(next: ModuleCallInterceptor | null): ModuleCallInterceptor | null {
  const prev = interceptor;
  interceptor = next;
  return prev;
}

/**
 * Id of the outermost `Module.call` currently running (or the last one that ran). It changes once
 * per top-level forward, so modules can count how often they are used within one pass.
 */
export function currentForwardPass(): number {
  return forwardPassCounter;
}

function validateName(owner: Module, kind: string, name: string): void {
  if (typeof name !== 'string' || name === '' || name.includes('.')) {
    throw new InvalidArgumentError(
      `${owner.constructor.name}: ${kind} name must be a non-empty string without '.', got '${name}'`,
    );
  }
}

/**
 * Base class of every layer and model, after PyTorch's `nn.Module`.
 *
 * Children and parameters are the fields holding a `Module` or a `Parameter` (in field order), so
 * `this.fc = new Linear(4, 2)` registers a child; `registerModule` / `registerParameter` do the same
 * explicitly. Buffers (plain tensors saved in the state dict, like BatchNorm's running stats) must be
 * declared with `registerBuffer`. Run a module with `call(...)`, which wraps `forward` with hooks.
 */
export abstract class Module {
  /**
   * Whether the module's forward takes quantized values (fixed-point QTensors): true on the fixed-point modules
   * conversion makes. A module without it that is given one in a graph fails with an error saying so.
   */
  static readonly takesQuantizedValues: boolean = false;

  training = true;
  private readonly _bufferPersistence = new Map<string, boolean>();
  private readonly _forwardPreHooks = new Map<number, ForwardPreHook>();
  private readonly _forwardHooks = new Map<number, ForwardHook>();

  // biome-ignore lint/suspicious/noExplicitAny: forward's signature is each model's own, so the base type cannot be narrower
  abstract forward(...args: any[]): any;

  /** Runs forward pre-hooks, `forward`, then forward hooks (each in registration order). */
  call(...args: Parameters<this['forward']>): ReturnType<this['forward']> {
    if (interceptor !== null) {
      return interceptor(this, args, (a) => this.callUnintercepted(a)) as ReturnType<this['forward']>;
    }
    return this.callUnintercepted(args) as ReturnType<this['forward']>;
  }

  /**
   * Whether `call` would only run `forward`: no hooks on this module and no interceptor (a tracer).
   * A parent may then compute what `call` returns another way (a fused kernel) without anyone noticing.
   */
  isCallPlain(): boolean {
    return interceptor === null && this._forwardPreHooks.size === 0 && this._forwardHooks.size === 0;
  }

  private callUnintercepted(args: unknown[]): unknown {
    callDepth++;
    if (callDepth === 1) forwardPassCounter++;
    try {
      let a: unknown[] = args;
      for (const hook of this._forwardPreHooks.values()) {
        const r = hook(this, a);
        if (r !== undefined) a = r;
      }
      let out: unknown = this.forward(...a);
      for (const hook of this._forwardHooks.values()) {
        const r = hook(this, a, out);
        if (r !== undefined) out = r;
      }
      return out;
    } finally {
      callDepth--;
    }
  }

  registerForwardPreHook(hook: ForwardPreHook): RemovableHandle {
    return addHook(this._forwardPreHooks, hook);
  }

  registerForwardHook(hook: ForwardHook): RemovableHandle {
    return addHook(this._forwardHooks, hook);
  }

  // ---- registration -------------------------------------------------------------------------

  registerModule<M extends Module | null>(name: string, module: M): M {
    validateName(this, 'submodule', name);
    if (module !== null && !(module instanceof Module)) {
      throw new InvalidArgumentError(
        `${this.constructor.name}.registerModule('${name}'): expected a Module, got ${typeof module}`,
      );
    }
    this.setChild(name, module);
    return module;
  }

  registerParameter<P extends Parameter | null>(name: string, param: P): P {
    validateName(this, 'parameter', name);
    if (param !== null && !(param instanceof Parameter)) {
      throw new InvalidArgumentError(
        `${this.constructor.name}.registerParameter('${name}'): expected a Parameter (wrap the tensor with new Parameter(t))`,
      );
    }
    if (this._bufferPersistence.has(name)) {
      throw new InvalidArgumentError(
        `${this.constructor.name}.registerParameter('${name}'): '${name}' is already a buffer`,
      );
    }
    (this as unknown as Record<string, unknown>)[name] = param;
    return param;
  }

  /** A tensor that is part of the module's state but not trained; `persistent` ones go into the state dict. */
  registerBuffer<T extends Tensor | null>(name: string, tensor: T, persistent = true): T {
    validateName(this, 'buffer', name);
    if (tensor !== null && !(tensor instanceof Tensor)) {
      throw new InvalidArgumentError(`${this.constructor.name}.registerBuffer('${name}'): expected a Tensor or null`);
    }
    if (tensor instanceof Parameter) {
      throw new InvalidArgumentError(
        `${this.constructor.name}.registerBuffer('${name}'): a Parameter cannot be a buffer; use registerParameter`,
      );
    }
    (this as unknown as Record<string, unknown>)[name] = tensor;
    this._bufferPersistence.set(name, persistent);
    return tensor;
  }

  // ---- children (containers override these three) --------------------------------------------

  /** Direct children, in registration order. */
  namedChildren(): [string, Module][] {
    const out: [string, Module][] = [];
    for (const key of Object.keys(this)) {
      const v = (this as unknown as Record<string, unknown>)[key];
      if (v instanceof Module) out.push([key, v]);
    }
    return out;
  }

  /** The direct child called `name`, or undefined. */
  getChild(name: string): Module | undefined {
    const v = (this as unknown as Record<string, unknown>)[name];
    return v instanceof Module ? v : undefined;
  }

  /** Replaces (or adds) the direct child `name`; null removes it. */
  setChild(name: string, module: Module | null): void {
    (this as unknown as Record<string, unknown>)[name] = module;
  }

  children(): Module[] {
    return this.namedChildren().map(([, m]) => m);
  }

  /** This module and every descendant once, with qualified names ('' for this one, 'layer1.conv1', ...). */
  namedModules(prefix = '', memo = new Set<Module>()): [string, Module][] {
    if (memo.has(this)) return [];
    memo.add(this);
    const out: [string, Module][] = [[prefix, this]];
    for (const [name, child] of this.namedChildren()) {
      out.push(...child.namedModules(prefix ? `${prefix}.${name}` : name, memo));
    }
    return out;
  }

  modules(): Module[] {
    return this.namedModules().map(([, m]) => m);
  }

  /** The descendant at a dotted path ('' is this module). */
  getSubmodule(target: string): Module {
    if (target === '') return this;
    let mod: Module = this;
    const parts = target.split('.');
    for (let i = 0; i < parts.length; i++) {
      const next = mod.getChild(parts[i]!);
      if (!next) {
        const where = parts.slice(0, i).join('.') || '(root)';
        const names = mod.namedChildren().map(([n]) => n);
        throw new InvalidArgumentError(
          `${this.constructor.name}.getSubmodule('${target}'): ${where} (${mod.constructor.name}) has no child '${parts[i]}'; children: ${names.join(', ') || 'none'}`,
        );
      }
      mod = next;
    }
    return mod;
  }

  /** Replaces the descendant at a dotted path (its parent must exist). */
  setSubmodule(target: string, module: Module): void {
    const dot = target.lastIndexOf('.');
    const parent = dot < 0 ? this : this.getSubmodule(target.slice(0, dot));
    const name = target.slice(dot + 1);
    validateName(parent, 'submodule', name);
    parent.setChild(name, module);
  }

  // ---- parameters and buffers ----------------------------------------------------------------

  /** Parameters in field order, own first then each child's, without duplicates. */
  namedParameters(options: { prefix?: string; recurse?: boolean } = {}): [string, Parameter][] {
    return this.namedOnce(options, (m) => m.ownParameters());
  }

  parameters(recurse = true): Parameter[] {
    return this.namedParameters({ recurse }).map(([, p]) => p);
  }

  namedBuffers(options: { prefix?: string; recurse?: boolean } = {}): [string, Tensor][] {
    return this.namedOnce(options, (m) => m.ownBuffers());
  }

  /** What `own` lists for this module (and its children when recursing), each value once, by dotted path. */
  private namedOnce<T>(
    options: { prefix?: string; recurse?: boolean },
    own: (m: Module) => readonly (readonly [string, T, ...unknown[]])[],
  ): [string, T][] {
    const { prefix = '', recurse = true } = options;
    const mods: [string, Module][] = recurse ? this.namedModules(prefix) : [[prefix, this]];
    const seen = new Set<T>();
    const out: [string, T][] = [];
    for (const [mp, m] of mods) {
      for (const [name, value] of own(m)) {
        if (seen.has(value)) continue;
        seen.add(value);
        out.push([mp ? `${mp}.${name}` : name, value]);
      }
    }
    return out;
  }

  buffers(recurse = true): Tensor[] {
    return this.namedBuffers({ recurse }).map(([, b]) => b);
  }

  /** This module's own parameters (not its children's). */
  ownParameters(): [string, Parameter][] {
    const out: [string, Parameter][] = [];
    for (const key of Object.keys(this)) {
      const v = (this as unknown as Record<string, unknown>)[key];
      if (v instanceof Parameter) out.push([key, v]);
    }
    return out;
  }

  /** This module's own non-null buffers with their persistence flag. */
  ownBuffers(): [string, Tensor, boolean][] {
    const out: [string, Tensor, boolean][] = [];
    for (const [name, persistent] of this._bufferPersistence) {
      const v = (this as unknown as Record<string, unknown>)[name];
      if (v instanceof Tensor) out.push([name, v, persistent]);
    }
    return out;
  }

  /** Replaces a registered buffer's tensor (keeps its persistence flag). */
  setBuffer(name: string, tensor: Tensor | null): void {
    if (!this._bufferPersistence.has(name)) {
      throw new InvalidArgumentError(
        `${this.constructor.name}.setBuffer('${name}'): no buffer of that name; register it with registerBuffer`,
      );
    }
    (this as unknown as Record<string, unknown>)[name] = tensor;
  }

  /** The parameter or buffer at a dotted path. */
  getTensor(target: string): Tensor {
    const dot = target.lastIndexOf('.');
    const owner = dot < 0 ? this : this.getSubmodule(target.slice(0, dot));
    const name = target.slice(dot + 1);
    const v = (owner as unknown as Record<string, unknown>)[name];
    if (!(v instanceof Tensor)) {
      throw new InvalidArgumentError(
        `${this.constructor.name}.getTensor('${target}'): ${owner.constructor.name} has no parameter or buffer '${name}'`,
      );
    }
    return v;
  }

  // ---- modes and gradients -------------------------------------------------------------------

  /** Sets training mode on this module and every descendant. */
  train(mode = true): this {
    for (const m of this.modules()) m.training = mode;
    return this;
  }

  eval(): this {
    return this.train(false);
  }

  /** Drops accumulated gradients (sets them to null, as PyTorch's default set_to_none). */
  zeroGrad(): void {
    for (const p of this.parameters()) p.grad = null;
  }

  /** Turns gradient tracking of every parameter on or off (freezing). */
  requiresGrad_(flag = true): this {
    for (const p of this.parameters()) p.requiresGrad = flag;
    return this;
  }

  /** Calls `fn` on every descendant (children first) and then on this module. */
  apply(fn: (m: Module) => void): this {
    for (const c of this.children()) c.apply(fn);
    fn(this);
    return this;
  }

  // ---- state dict ----------------------------------------------------------------------------

  /**
   * Parameters and persistent buffers by qualified name, and modules' extra states by module path.
   * Tensors share storage with the module (as in PyTorch) unless `clone` is set; extra states are
   * always snapshots.
   */
  stateDict(options: { prefix?: string; clone?: boolean } = {}): StateDict {
    return collectStateDict(this, options.prefix ?? '', options.clone ?? false);
  }

  /**
   * Copies values into the module's tensors in place, then hands each module its extra state.
   * Strict by default: missing or unexpected keys (extra states included, as '<path>._extra_state',
   * when the dict has an `extra` record) throw a `StateDictError` listing all of them; shape
   * mismatches and extra states a module rejects always throw.
   */
  loadStateDict(stateDict: StateDict, options: LoadStateDictOptions = {}): LoadStateDictResult {
    return loadIntoModule(this, stateDict, options);
  }

  /**
   * State that is neither a parameter nor a buffer but belongs in the state dict (PyTorch's
   * get_extra_state), as JSON; undefined, the default, for none. Return a fresh value that carries
   * its own version, and override `loadExtraState` to read it back.
   */
  extraState(): JsonValue | undefined {
    return undefined;
  }

  /**
   * Restores a value `extraState()` returned, maybe in another build (check its version). Called by
   * `loadStateDict` after all tensors are loaded, and only when the dict has an entry for this module.
   */
  loadExtraState(_state: JsonValue): void {
    throw new StateDictError({
      detail: `${this.constructor.name} has no extra state to load; override loadExtraState together with extraState`,
    });
  }

  // ---- printing ------------------------------------------------------------------------------

  /** Extra text shown between the parentheses of `toString()` (layers override it). */
  extraRepr(): string {
    return '';
  }

  toString(): string {
    const kids = this.namedChildren();
    const head = `${this.constructor.name}(${this.extraRepr()}`;
    if (!kids.length) return `${head})`;
    const lines = kids.map(([n, m]) => `  (${n}): ${m.toString().split('\n').join('\n  ')}`);
    return `${head}\n${lines.join('\n')}\n)`;
  }
}

function addHook<H>(map: Map<number, H>, hook: H): RemovableHandle {
  if (typeof hook !== 'function') throw new InvalidArgumentError('hook must be a function');
  const id = nextHookId++;
  map.set(id, hook);
  return { id, remove: () => void map.delete(id) };
}
