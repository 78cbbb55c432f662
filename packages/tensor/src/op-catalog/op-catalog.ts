// The op catalog: every op once (op-definitions.ts), and the modules, traced functions and tensor
// methods that implement each, registered by the package that owns them (@qtk/nn its module
// classes, @qtk/tensor its functions and methods, @qtk/onnx the importer's functions, @qtk/fusion
// its fused modules). Prepare, conversion, the CLI and third-party marches ask it what op a node is.
import { RegistryError, UnknownOpError } from '../errors.js';
import { Registry } from '../named-registry.js';
import { closeNames } from '../close-names.js';
import { OP_DEFINITIONS, type OpDefinition } from './op-definitions.js';

/** The parts of a fused conv module (Conv → add → activation), for a march converting it op by op. */
export interface FusedOp {
  /** Catalog op of the layer ('Conv', 'ConvTranspose', 'Gemm'); BatchNormalization is already folded into its weight and bias. */
  readonly base: string;
  /** The layer's attributes, as its own catalog entry reports them (stride, padding, dilation, groups, kernelShape, ...). */
  readonly baseAttrs: Readonly<Record<string, unknown>>;
  /** The ops the module runs, in order: the base, then 'Add' when fused with an add, then the activation's op. */
  readonly parts: readonly string[];
  /**
   * The add: `addendInput` is the index of the node argument added to the layer's output (the
   * layer takes argument 0); `baseFirst` whether the sum is `layer + addend` (else `addend + layer`).
   */
  readonly add: { readonly addendInput: number; readonly baseFirst: boolean } | null;
  /** The activation after the add (or the layer): 'Relu', or 'Clip' with min 0 and max 6 for ReLU6. */
  readonly activation: { readonly op: string; readonly attrs: Readonly<Record<string, unknown>> } | null;
}

/** What the catalog says about one module, function or method call. */
export interface OpMatch {
  readonly op: string;
  /** The attributes capability tables constrain (names from the op's `attributes`). */
  readonly attrs: Readonly<Record<string, unknown>>;
  /** The op's `ownOutputScale`, unless this implementation overrides it. */
  readonly ownOutputScale: boolean;
  /** The parts of a fused module; null for everything else. */
  readonly fused: FusedOp | null;
}

/** A traced call's constant arguments, as the graph node holds them. */
export interface CallSite {
  readonly args: readonly unknown[];
  readonly kwargs?: Readonly<Record<string, unknown>>;
}

interface Implementation<S> {
  /** The op, or a choice by the module / call (the importer's reduce: by its kind); null: no catalog op for this one. */
  readonly op: string | ((subject: S) => string | null);
  readonly attrs?: (subject: S) => Record<string, unknown>;
  /**
   * Overrides the op's `ownOutputScale` for this implementation, where QTK's prepare treats it
   * differently (nn.Upsample keeps its input scale, `interpolate` gets its own).
   */
  readonly ownOutputScale?: boolean;
}

type AnyClass = abstract new (...args: never[]) => object;

/** A module class standing for an op (its subclasses too). */
// biome-ignore lint/suspicious/noExplicitAny: a list of entries for different classes is typed ModuleImplementation[]
export interface ModuleImplementation<M extends object = any> extends Implementation<M> {
  readonly cls: abstract new (...args: never[]) => M;
  /** Ops of the module's own methods called from a graph (`FloatFunctional.add` → 'Add'). */
  readonly methods?: Readonly<Record<string, string>>;
  /** The parts of a fused module. */
  readonly fused?: (module: M) => FusedOp;
}

/** A traced function or tensor method (by the name the graph records) standing for an op. */
export interface CallImplementation extends Implementation<CallSite> {
  readonly name: string;
}

const ops = new Registry<OpDefinition>('op');
for (const def of OP_DEFINITIONS) ops.register(def);

const functions = new Registry<CallImplementation>('traced function');
const methods = new Registry<CallImplementation>('tensor method');
// keyed by class identity, not name: two packages may each have a class called 'Conv2d'
const modules = new Map<AnyClass, ModuleImplementation>();

function unknown(op: string, where: string): UnknownOpError {
  return new UnknownOpError(op, closeNames(op, ops.names()), where);
}

/** The catalog entry of `name`; UnknownOpError (naming close ops) when there is none. */
export function getOp(name: string, where = 'op catalog'): OpDefinition {
  if (!ops.has(name)) throw unknown(name, where);
  return ops.get(name);
}

export function hasOp(name: string): boolean {
  return ops.has(name);
}

/** Every op of the catalog, in definition order. */
export function listOps(): OpDefinition[] {
  return ops.list();
}

/** Adds an op QTK does not define (a third-party march's own); a second definition of a name throws. */
export function defineOp(def: {
  name: string;
  ownOutputScale: boolean;
  attributes?: readonly string[];
  fusionRoles?: OpDefinition['fusionRoles'];
}): OpDefinition {
  return ops.register(
    Object.freeze({
      name: def.name,
      ownOutputScale: def.ownOutputScale,
      attributes: Object.freeze([...(def.attributes ?? [])]),
      fusionRoles: Object.freeze([...(def.fusionRoles ?? [])]),
    }),
  );
}

function checkStaticOp<S>(impl: Implementation<S>, who: string): void {
  if (typeof impl.op === 'string') getOp(impl.op, who);
}

/** Registers a module class as an implementation (the package defining the class does this when it loads). */
export function registerModuleOp<M extends object>(impl: ModuleImplementation<M>): void {
  const taken = modules.get(impl.cls);
  if (taken === impl) return;
  if (taken)
    throw new RegistryError(
      'module op',
      impl.cls.name,
      `module class ${impl.cls.name} already stands for an op in the op catalog; register each class once`,
    );
  checkStaticOp(impl, `module ${impl.cls.name}`);
  for (const op of Object.values(impl.methods ?? {})) getOp(op, `module ${impl.cls.name}`);
  modules.set(impl.cls, impl as ModuleImplementation);
}

/** Registers a traced function (by its traced name) as an implementation. */
export function registerFunctionOp(impl: CallImplementation): void {
  checkStaticOp(impl, `function ${impl.name}`);
  functions.register(impl);
}

/** Registers a tensor method (by its name) as an implementation. */
export function registerMethodOp(impl: CallImplementation): void {
  checkStaticOp(impl, `tensor method ${impl.name}`);
  methods.register(impl);
}

function matchOf<S>(impl: Implementation<S>, subject: S, who: string, fused: FusedOp | null = null): OpMatch | null {
  const op = typeof impl.op === 'string' ? impl.op : impl.op(subject);
  if (op === null) return null;
  const def = getOp(op, who);
  return {
    op,
    attrs: impl.attrs ? impl.attrs(subject) : {},
    ownOutputScale: impl.ownOutputScale ?? def.ownOutputScale,
    fused,
  };
}

function moduleImplementationOf(module: object): ModuleImplementation | null {
  for (let p = Object.getPrototypeOf(module); p !== null && p !== Object.prototype; p = Object.getPrototypeOf(p)) {
    const impl = modules.get(p.constructor as AnyClass);
    if (impl) return impl;
  }
  return null;
}

/**
 * The op a module stands for (its class or nearest registered base class), with its attributes
 * and, for a fused module, its parts; with `method`, the op of that method of the module
 * (`FloatFunctional.add`). Null when the catalog has no op for it (containers, stubs, user modules).
 */
export function opOfModule(module: object, method?: string): OpMatch | null {
  const impl = moduleImplementationOf(module);
  if (!impl) return null;
  const who = `module ${impl.cls.name}`;
  if (method !== undefined) {
    const op = impl.methods && Object.hasOwn(impl.methods, method) ? impl.methods[method] : undefined;
    return op === undefined ? null : matchOf({ op }, module, who);
  }
  return matchOf(impl, module, who, impl.fused ? impl.fused(module) : null);
}

/** The op of a traced function call (`node.target` of a call_function node); null when it has none. */
export function opOfFunction(name: string, call: CallSite = { args: [] }): OpMatch | null {
  return functions.has(name) ? matchOf(functions.get(name), call, `function ${name}`) : null;
}

/** The op of a tensor method call (`node.target` of a call_method node); null when it has none. */
export function opOfMethod(name: string, call: CallSite = { args: [] }): OpMatch | null {
  return methods.has(name) ? matchOf(methods.get(name), call, `tensor method ${name}`) : null;
}

/**
 * The registered implementations of `op`: module classes, function names, method names (those
 * choosing their op per call, like the importer's `reduce`, are not listed).
 */
export function implementationsOf(op: string): { modules: AnyClass[]; functions: string[]; methods: string[] } {
  getOp(op);
  return {
    modules: [...modules.values()].filter((m) => m.op === op).map((m) => m.cls),
    functions: functions
      .list()
      .filter((f) => f.op === op)
      .map((f) => f.name),
    methods: methods
      .list()
      .filter((f) => f.op === op)
      .map((f) => f.name),
  };
}
