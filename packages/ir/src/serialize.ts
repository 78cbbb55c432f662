// Versioned JSON form of a GraphModule: its graph and its module tree (class names and
// constructor configs). Weights travel separately in the state dict (nn's stateDict / saveStateDict).
import { type Module, Parameter, type StateDict } from '@qtk/nn';
import { DTYPES, Tensor, zeros, type DType } from '@qtk/tensor';
import { z } from 'zod';
import { SerializationError } from './errors.js';
import { Graph } from './graph.js';
import { GraphModule, SubmoduleContainer } from './graph-module.js';
import { moduleCodecs, type JsonValue, type ModuleCodecRegistry } from './module-codecs.js';
import { Node, OPCODES, type Argument } from './node.js';
import { findSubmodule } from './find-submodule.js';

export const GRAPH_MODULE_FORMAT = 'qtk.graph-module';
export const GRAPH_MODULE_VERSION = 1;

export interface SerializedModule {
  path: string;
  type: string;
  /** Constructor config from the type's codec; absent for types without one. */
  config?: JsonValue;
  /** Set when this path holds the same instance as another path. */
  aliasOf?: string;
}

export interface SerializedTensor {
  /** Qualified name (module path + '.' + attribute). */
  path: string;
  kind: 'parameter' | 'buffer';
  shape: number[];
  dtype: DType;
  persistent: boolean;
}

export interface SerializedNode {
  name: string;
  op: (typeof OPCODES)[number];
  target: string;
  method?: string;
  args: JsonValue[];
  kwargs: Record<string, JsonValue>;
  scope: string;
  /** Entries of node.meta that are JSON primitives or arrays of them (e.g. `impure`, `fusedFrom`). */
  meta?: Record<string, JsonValue>;
}

export interface SerializedGraphModule {
  format: typeof GRAPH_MODULE_FORMAT;
  version: number;
  className: string;
  modules: SerializedModule[];
  /** Parameters and buffers not created by a module constructor (root-level ones, trace constants, codec-less modules). */
  tensors: SerializedTensor[];
  graph: { nodes: SerializedNode[] };
  /** The GraphModule's `meta` (absent when empty). */
  meta?: Record<string, JsonValue>;
}

const jsonValue: z.ZodType<JsonValue> = z.lazy(() =>
  z.union([z.null(), z.boolean(), z.number(), z.string(), z.array(jsonValue), z.record(jsonValue)]),
);

const MAX_TENSOR_ELEMENTS = 2 ** 31 - 1;

const schema = z.object({
  format: z.literal(GRAPH_MODULE_FORMAT),
  version: z.number().int().positive(),
  className: z.string(),
  modules: z.array(
    z.object({
      path: z.string().min(1),
      type: z.string(),
      config: jsonValue.optional(),
      aliasOf: z.string().optional(),
    }),
  ),
  tensors: z.array(
    z.object({
      path: z.string().min(1),
      kind: z.enum(['parameter', 'buffer']),
      shape: z.array(z.number().int().nonnegative()),
      dtype: z.enum(DTYPES as unknown as [DType, ...DType[]]),
      persistent: z.boolean(),
    }),
  ),
  graph: z.object({
    nodes: z.array(
      z.object({
        name: z.string().min(1),
        op: z.enum(OPCODES as unknown as [string, ...string[]]),
        target: z.string(),
        method: z.string().optional(),
        args: z.array(jsonValue),
        kwargs: z.record(jsonValue),
        scope: z.string(),
        meta: z.record(jsonValue).optional(),
      }),
    ),
  }),
  meta: z.record(jsonValue).optional(),
});

// ---- values ---------------------------------------------------------------------------------

function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (typeof v !== 'object' || v === null) return false;
  const p = Object.getPrototypeOf(v);
  return p === Object.prototype || p === null;
}

function encode(v: Argument, where: string): JsonValue {
  if (v instanceof Node) return { $node: v.name };
  if (v === undefined) return { $undefined: true };
  if (v === null || typeof v === 'boolean' || typeof v === 'string') return v;
  if (typeof v === 'number') {
    if (Number.isNaN(v)) return { $number: 'NaN' };
    if (!Number.isFinite(v)) return { $number: v > 0 ? 'Infinity' : '-Infinity' };
    return Object.is(v, -0) ? { $number: '-0' } : v;
  }
  if (Array.isArray(v)) return v.map((x, i) => encode(x, `${where}[${i}]`));
  if (isPlainObject(v)) {
    const o: Record<string, JsonValue> = {};
    for (const k of Object.keys(v)) o[k] = encode(v[k], `${where}.${k}`);
    return Object.keys(v).some((k) => k.startsWith('$')) ? { $object: o } : o;
  }
  const kind =
    v instanceof Tensor
      ? 'a Tensor (graphs read tensors through get_attr nodes)'
      : typeof v === 'function'
        ? 'a function'
        : `a ${(v as object).constructor?.name ?? typeof v}`;
  throw new SerializationError(
    `cannot serialize ${where}: it is ${kind}; only nodes, numbers, strings, booleans, null, undefined, arrays and plain objects can be`,
  );
}

function decode(v: JsonValue, nodes: Map<string, Node>, where: string): Argument {
  if (Array.isArray(v)) return v.map((x, i) => decode(x, nodes, `${where}[${i}]`));
  if (v === null || typeof v !== 'object') return v;
  if ('$node' in v) {
    const n = nodes.get(String(v.$node));
    if (!n)
      throw new SerializationError(`${where} refers to node '${String(v.$node)}', which is not defined before it`);
    return n;
  }
  if ('$undefined' in v) return undefined;
  if ('$number' in v) return v.$number === '-0' ? -0 : Number(v.$number);
  const body = ('$object' in v ? v.$object : v) as Record<string, JsonValue>;
  const o: Record<string, unknown> = {};
  for (const k of Object.keys(body)) o[k] = decode(body[k]!, nodes, `${where}.${k}`);
  return o;
}

// ---- writing ----------------------------------------------------------------------------------

/** The JSON form of a GraphModule (without weights). Throws SerializationError for unserializable arguments. */
function isJsonPrimitive(v: unknown): boolean {
  return v === null || typeof v === 'boolean' || typeof v === 'string' || typeof v === 'number';
}

export function serializeGraphModule(
  gm: GraphModule,
  options: { codecs?: ModuleCodecRegistry } = {},
): SerializedGraphModule {
  const codecs = options.codecs ?? moduleCodecs;
  const modules: SerializedModule[] = [];
  const tensors: SerializedTensor[] = [];
  const seen = new Map<Module, string>();
  const addTensors = (m: Module, path: string) => {
    const prefix = path ? `${path}.` : '';
    for (const [name, p] of m.ownParameters())
      tensors.push({ path: prefix + name, kind: 'parameter', shape: [...p.shape], dtype: p.dtype, persistent: true });
    for (const [name, b, persistent] of m.ownBuffers())
      tensors.push({ path: prefix + name, kind: 'buffer', shape: [...b.shape], dtype: b.dtype, persistent });
  };
  const walk = (m: Module, prefix: string) => {
    for (const [name, child] of m.namedChildren()) {
      const path = prefix ? `${prefix}.${name}` : name;
      const first = seen.get(child);
      if (first !== undefined) {
        modules.push({ path, type: child.constructor.name, aliasOf: first });
        continue;
      }
      seen.set(child, path);
      const codec = codecs.forModule(child);
      const type =
        child instanceof SubmoduleContainer && child.originalType ? child.originalType : child.constructor.name;
      const entry: SerializedModule = { path, type };
      if (codec) entry.config = codec.config(child);
      else addTensors(child, path);
      modules.push(entry);
      walk(child, path);
    }
  };
  addTensors(gm, '');
  walk(gm, '');
  const nodes: SerializedNode[] = gm.graph.nodes.map((n) => {
    const where = `node '${n.name}'`;
    const s: SerializedNode = {
      name: n.name,
      op: n.op,
      target: n.target,
      args: n.args.map((a, i) => encode(a, `${where} args[${i}]`)),
      kwargs: encode(n.kwargs, `${where} kwargs`) as Record<string, JsonValue>,
      scope: n.scope,
    };
    if (n.method !== undefined) s.method = n.method;
    const meta = Object.entries(n.meta).filter(
      ([, v]) => isJsonPrimitive(v) || (Array.isArray(v) && v.every(isJsonPrimitive)),
    );
    if (meta.length) s.meta = Object.fromEntries(meta) as Record<string, JsonValue>;
    return s;
  });
  const out: SerializedGraphModule = {
    format: GRAPH_MODULE_FORMAT,
    version: GRAPH_MODULE_VERSION,
    className: gm.className,
    modules,
    tensors,
    graph: { nodes },
  };
  if (Object.keys(gm.meta).length) out.meta = JSON.parse(JSON.stringify(gm.meta)) as Record<string, JsonValue>;
  return out;
}

// ---- reading ----------------------------------------------------------------------------------

export interface DeserializeOptions {
  /**
   * A freshly built instance of the traced model. Modules are taken from it where the path and
   * class match (its fields and methods serve root-level fxWrap-ed methods); needed for module
   * types without a codec that the graph calls.
   */
  root?: Module;
  codecs?: ModuleCodecRegistry;
  /** Loaded (strictly) into the result. */
  stateDict?: StateDict;
}

function getAt(root: Module, path: string): Module | undefined {
  return findSubmodule(root, path) ?? undefined;
}

/** Rebuilds a GraphModule from its JSON form (object or string). */
export function deserializeGraphModule(
  data: SerializedGraphModule | string | unknown,
  options: DeserializeOptions = {},
): GraphModule {
  let raw: unknown = data;
  if (typeof data === 'string') {
    try {
      raw = JSON.parse(data);
    } catch (e) {
      throw new SerializationError('deserializeGraphModule: not valid JSON', { cause: e });
    }
  }
  const version = (raw as { version?: unknown })?.version;
  if (typeof version === 'number' && version > GRAPH_MODULE_VERSION) {
    throw new SerializationError(
      `deserializeGraphModule: format version ${version} is newer than this @qtk/ir reads (${GRAPH_MODULE_VERSION}); upgrade @qtk/ir`,
    );
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) {
    const issues = parsed.error.issues.slice(0, 5).map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`);
    throw new SerializationError(`deserializeGraphModule: not a serialized GraphModule: ${issues.join('; ')}`, {
      cause: parsed.error,
    });
  }
  const s = parsed.data as SerializedGraphModule;
  const codecs = options.codecs ?? moduleCodecs;
  const called = new Set(s.graph.nodes.filter((n) => n.op === 'call_module').map((n) => n.target));
  if (called.has('') && !options.root) {
    throw new SerializationError(
      `deserializeGraphModule: the graph calls methods of the root model (${s.className}), which run the model's own code; pass { root: new ${s.className}(...) }`,
    );
  }

  // Config-implied tensors are checked against the state dict before they are allocated.
  const held = options.stateDict?.tensors;
  const stateShape = held ? (key: string) => (Object.hasOwn(held, key) ? held[key]!.shape : undefined) : undefined;

  // Module tree, parents before children (the serialized order).
  const holder = new SubmoduleContainer();
  for (const e of s.modules) {
    const dot = e.path.lastIndexOf('.');
    const parent = dot < 0 ? holder : getAt(holder, e.path.slice(0, dot));
    if (!parent) throw new SerializationError(`module '${e.path}': its parent is missing from the module list`);
    const name = e.path.slice(dot + 1);
    if (e.aliasOf !== undefined) {
      const target = getAt(holder, e.aliasOf);
      if (!target)
        throw new SerializationError(`module '${e.path}' is an alias of '${e.aliasOf}', which does not exist`);
      parent.setChild(name, target);
      continue;
    }
    const existing = parent.getChild(name);
    if (existing && existing.constructor.name === e.type) continue; // built by an ancestor's constructor or taken from root
    const fromRoot = options.root ? getAt(options.root, e.path) : undefined;
    let m: Module;
    if (fromRoot && fromRoot.constructor.name === e.type) m = fromRoot;
    else if (codecs.has(e.type)) {
      try {
        m = codecs.build(e.type, e.config ?? null, { path: e.path, ...(stateShape ? { stateShape } : {}) });
      } catch (err) {
        if (err instanceof SerializationError) throw err;
        throw new SerializationError(
          `module '${e.path}' (${e.type}): its codec could not rebuild it from ${JSON.stringify(e.config)}: ${(err as Error).message}`,
          { cause: err },
        );
      }
    } else if (called.has(e.path)) {
      throw new SerializationError(
        `module '${e.path}' is a ${e.type}, which the graph calls, and there is no codec for it; ` +
          `register one (moduleCodecs.register({ cls: ${e.type}, config, create })) or pass { root: new ${s.className}(...) }`,
      );
    } else {
      m = new SubmoduleContainer(e.type === 'SubmoduleContainer' ? null : e.type);
    }
    if (parent === holder) holder.registerModule(name, m);
    else parent.setChild(name, m);
  }
  for (const t of s.tensors) {
    const dot = t.path.lastIndexOf('.');
    const owner = dot < 0 ? holder : getAt(holder, t.path.slice(0, dot));
    if (!owner) throw new SerializationError(`tensor '${t.path}': no module at '${t.path.slice(0, dot)}'`);
    const name = t.path.slice(dot + 1);
    if ((owner as unknown as Record<string, unknown>)[name] instanceof Tensor) continue;
    const held = t.kind === 'parameter' || t.persistent ? stateShape?.(t.path) : undefined;
    const shape = `[${t.shape.join(', ')}]`;
    if (held && (held.length !== t.shape.length || held.some((d, i) => d !== t.shape[i]))) {
      throw new SerializationError(
        `tensor '${t.path}': the graph gives it shape ${shape}, the state dict [${held.join(', ')}]; the file is damaged: re-save the model`,
      );
    }
    if (!held && t.shape.reduce((a, b) => a * b, 1) > MAX_TENSOR_ELEMENTS) {
      throw new SerializationError(
        `tensor '${t.path}': shape ${shape} has more elements than a tensor can hold; the file is damaged: re-save the model`,
      );
    }
    const value = zeros(t.shape, { dtype: t.dtype });
    if (t.kind === 'parameter') owner.registerParameter(name, new Parameter(value));
    else owner.registerBuffer(name, value, t.persistent);
  }

  const graph = new Graph();
  const byName = new Map<string, Node>();
  for (const n of s.graph.nodes) {
    const where = `node '${n.name}'`;
    let node: Node;
    try {
      node = graph.createNode(
        n.op as Node['op'],
        n.target,
        n.args.map((a, i) => decode(a, byName, `${where} args[${i}]`)),
        decode(n.kwargs, byName, `${where} kwargs`) as Record<string, Argument>,
        { name: n.name, method: n.method, scope: n.scope },
      );
    } catch (e) {
      if (e instanceof SerializationError) throw e;
      throw new SerializationError(`${where}: ${(e as Error).message}`, { cause: e });
    }
    if (node.name !== n.name) throw new SerializationError(`duplicate node name '${n.name}'`);
    if (n.meta) Object.assign(node.meta, n.meta);
    byName.set(n.name, node);
  }
  try {
    graph.validate();
  } catch (e) {
    throw new SerializationError(`deserializeGraphModule: the graph is invalid: ${(e as Error).message}`, { cause: e });
  }
  const gm = new GraphModule(holder, graph, { className: s.className });
  Object.defineProperty(gm, '_root', {
    value: options.root ?? null,
    enumerable: false,
    writable: true,
    configurable: true,
  });
  if (s.meta) gm.meta = s.meta;
  if (options.stateDict) gm.loadStateDict(options.stateDict);
  return gm;
}

/** JSON text of serializeGraphModule. */
export function graphModuleToJson(gm: GraphModule, space?: number): string {
  return JSON.stringify(serializeGraphModule(gm), null, space);
}
