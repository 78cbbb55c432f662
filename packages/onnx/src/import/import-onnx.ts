import { Graph, GraphModule, sanitizeName } from '@qtk/ir';
import { Module } from '@qtk/nn';
import { Tensor } from '@qtk/tensor';
import { ImportState, NodeContext, Unsupported, qtkDType, type Attrs, type Val } from './context.js';
import {
  OnnxError,
  OnnxFormatError,
  OnnxInputShapeError,
  OnnxLimitError,
  UnsupportedOnnxOpError,
  type UnsupportedNode,
} from '../errors.js';
import { DEFAULT_MAX_ELEMENTS, ImportLimits } from './limits.js';
import {
  COMPUTED_TYPES,
  decodeModel,
  onnxTypeName,
  type ModelMsg,
  type NodeMsg,
  type ValueInfoMsg,
} from '../onnx-schema.js';
import { layerHandlers, type Handler } from './layers.js';
import { REFUSED_ONNX_OPS } from './refused.js';
import { reduceHandlers } from './reduce.js';
import { tensorHandlers } from './tensor.js';
import { elementwiseHandlers } from './elementwise.js';
import { checkGraph } from './graph-checks.js';
import { findBiasAdds, findModuleFusions } from './fusions.js';
import { constToTensor, readTensorProto } from '../tensor-proto.js';
import { checkFloatAttributes, initializerWarning } from './value-checks.js';
import { QTK_VISUAL_DOMAIN } from '../visual-domain.js';
import {
  checkInputShapeNames,
  declaredInput,
  type DefaultedDim,
  defaultedDimsAdvice,
  importShape,
} from './input-shapes.js';

export const MIN_OPSET = 1;
export const MAX_OPSET = 21;
export { DEFAULT_MAX_ELEMENTS };

const handlers: Record<string, Handler> = {
  ...layerHandlers,
  ...tensorHandlers,
  ...reduceHandlers,
  ...elementwiseHandlers,
};

/** ONNX operator types the importer handles (default domain). */
export const SUPPORTED_ONNX_OPS: readonly string[] = Object.keys(handlers).sort();

export interface ImportOnnxOptions {
  /**
   * The shapes to import the graph inputs at (by ONNX name), like ONNX Runtime's free-dimension overrides:
   * free dims (dim_param or unset) take these values, fixed ones must agree. The import computes the model
   * once at these shapes, so a pooling window or a fixed reshape sees the real size. Inputs without a shape
   * here or in exampleInputs have their free dims set to 1.
   */
  inputShapes?: Record<string, readonly number[]>;
  /** Example values of the graph inputs (by ONNX name); only their shapes matter (as inputShapes). */
  exampleInputs?: Record<string, Tensor>;
  /** Graph inputs to fix to constant values (by ONNX name); they stop being inputs and fold like initializers. */
  fixedInputs?: Record<string, Tensor>;
  /**
   * Cap on the elements of any one tensor the import computes (declared inputs, folded constants, the
   * example value of every node, a convolution's column matrix), 8 times that on all of them together,
   * and 512 times that on the multiply-adds of convolutions and matrix products; default
   * DEFAULT_MAX_ELEMENTS (2^25). Over budget, importOnnx throws OnnxLimitError. Initializers are bounded
   * by the file itself: their declared dims must match the data the file holds.
   */
  maxElements?: number;
  /** Receives what the importer accepts but finds suspicious (default: console.warn). */
  onWarning?: (message: string) => void;
  /** Where the bytes come from (a file name or URL), named in errors. */
  source?: string;
}

/** Declared shape of a graph input: numbers for fixed dims, null for dynamic ones. */
export interface OnnxInputSpec {
  name: string;
  onnxName: string;
  dtype: 'float32' | 'int32' | 'bool';
  shape: (number | null)[] | null;
}

class OnnxModel extends Module {
  forward(): never {
    throw new OnnxError('OnnxModel only holds the modules of an imported ONNX graph; call the GraphModule');
  }
}

/** The GraphModule of an imported ONNX model; checks input shapes against the model's declaration. */
export class OnnxGraphModule extends GraphModule {
  inputSpecs: readonly OnnxInputSpec[] = [];
  /** The ONNX names of the graph outputs, in order (an export can keep them: exportOnnx's outputNames). */
  outputNames: readonly string[] = [];

  // biome-ignore lint/suspicious/noExplicitAny: forward's signature is each model's own, so the base type cannot be narrower
  override forward(...inputs: unknown[]): any {
    this.inputSpecs.forEach((spec, i) => {
      const x = inputs[i];
      if (!(x instanceof Tensor) || !spec.shape) return;
      const bad = x.ndim !== spec.shape.length || spec.shape.some((d, k) => d !== null && d !== x.shape[k]);
      if (bad) {
        throw new OnnxInputShapeError(
          `${this.className}: input '${spec.onnxName}' must have shape [${spec.shape.map((d) => d ?? '?').join(', ')}] ('?' = any size), got [${x.shape.join(', ')}]`,
        );
      }
    });
    return super.forward(...inputs);
  }
}

let memberProbe: OnnxGraphModule | undefined;

/**
 * Whether `name` is taken by the imported GraphModule itself (Module and GraphModule methods,
 * their fields, Object.prototype names such as __proto__), so a child of that name would shadow it.
 */
function isMember(name: string): boolean {
  memberProbe ??= new OnnxGraphModule(new OnnxModel(), new Graph());
  return name in memberProbe;
}

function decode(bytes: Uint8Array, source: string | undefined): ModelMsg {
  const what = source === undefined ? 'the bytes' : `'${source}'`;
  let model: ModelMsg;
  try {
    model = decodeModel(bytes);
  } catch (e) {
    throw new OnnxFormatError(
      `importOnnx: ${what} ${source === undefined ? 'are' : 'is'} not a valid ONNX model (${(e as Error).message}); the file may be truncated or not ONNX`,
      { cause: e },
    );
  }
  if (!model.graph?.node || model.graph.node.length === 0 || !model.ir_version) {
    throw new OnnxFormatError(
      `importOnnx: ${what} ${source === undefined ? 'hold' : 'holds'} no ONNX graph (no ir_version or no nodes); the file may be truncated or not ONNX`,
    );
  }
  return model;
}

function inputSpec(v: ValueInfoMsg): { dtype: 'float32' | 'int32' | 'bool'; shape: (number | null)[] | null } {
  const { dims } = declaredInput(v);
  const elem = v.type?.tensor_type?.elem_type ?? 1;
  const dtype = qtkDType(elem);
  if (!dtype) {
    throw new OnnxError(
      `importOnnx: input '${v.name ?? ''}' has element type ${onnxTypeName(elem)}; QTK imports inputs of ${COMPUTED_TYPES} (give the model a float input and cast it inside, or export it in float)`,
    );
  }
  return {
    dtype,
    shape: dims ? dims.map((d) => (typeof d === 'number' ? d : null)) : null,
  };
}

/** The node's name, with PyTorch's scope form shortened: '/layer1/conv1/Conv' → 'layer1/conv1' (sanitized later to layer1_conv1). */
function nodeName(n: NodeMsg, index: number): string {
  const opType = n.op_type ?? 'node';
  const raw = n.name || `${opType}_${index}`;
  if (!raw.startsWith('/')) return raw;
  const parts = raw.slice(1).split('/');
  if (parts.length > 1 && parts[parts.length - 1] === opType) parts.pop();
  return parts.join('/');
}

/**
 * Imports an ONNX model from the file's bytes as a GraphModule of @qtk/nn modules named after
 * the ONNX nodes (Conv → Conv2d with its weights, BatchNormalization → BatchNorm2d, ...), with
 * functional nodes for the rest; constant subgraphs fold at import. Throws UnsupportedOnnxOpError
 * listing every node it cannot express.
 */
export function importOnnx(bytes: Uint8Array, options: ImportOnnxOptions = {}): OnnxGraphModule {
  if (typeof bytes === 'string') {
    throw new OnnxError(
      `importOnnx: expected the model's bytes (a Uint8Array), got the string '${bytes}'; importOnnx from @qtk/onnx/node reads a file path`,
    );
  }
  const { source } = options;
  const model = decode(bytes, source);
  try {
    return importModel(model, options);
  } catch (e) {
    // Errors about the model's contents name the file they come from.
    if (source !== undefined && e instanceof OnnxError) {
      e.message = e.message.startsWith('importOnnx: ')
        ? `importOnnx('${source}'): ${e.message.slice(12)}`
        : `importOnnx('${source}'): ${e.message}`;
    }
    throw e;
  }
}

function importModel(model: ModelMsg, options: ImportOnnxOptions): OnnxGraphModule {
  const g = model.graph!;
  const opset = Number((model.opset_import ?? []).find((o) => !o.domain || o.domain === 'ai.onnx')?.version ?? 0);
  if (opset < MIN_OPSET || opset > MAX_OPSET) {
    throw new OnnxError(
      `importOnnx: the model uses ai.onnx opset ${opset}; QTK imports opsets ${MIN_OPSET} to ${MAX_OPSET} (convert it with onnx.version_converter, e.g. to ${MAX_OPSET})`,
    );
  }
  const warn = options.onWarning ?? ((m: string) => console.warn(`[qtk] ${m}`));
  g.node = checkGraph(g, new Set(Object.keys(options.fixedInputs ?? {})), warn);
  const maxElements = options.maxElements ?? DEFAULT_MAX_ELEMENTS;
  if (!(maxElements > 0)) throw new OnnxError(`importOnnx: maxElements must be a positive number, got ${maxElements}`);
  const state = new ImportState(new ImportLimits(maxElements), isMember);
  state.warn = warn;
  const values = new Map<string, Val>();
  for (const init of g.initializer ?? []) {
    const t = constToTensor(readTensorProto(init, `initializer '${init.name ?? ''}'`));
    const warning = initializerWarning(init.name ?? '', t);
    if (warning) warn(`importOnnx: ${warning}`);
    values.set(init.name ?? '', { kind: 'const', t });
  }
  for (const [name, t] of Object.entries(options.fixedInputs ?? {})) values.set(name, { kind: 'const', t });

  const specs: OnnxInputSpec[] = [];
  const graphInputs = (g.input ?? []).filter((vi) => !values.has(vi.name ?? ''));
  const { inputShapes = {}, exampleInputs: examples } = options;
  checkInputShapeNames(
    inputShapes,
    graphInputs.map((vi) => vi.name ?? ''),
    examples,
  );
  const defaulted: DefaultedDim[] = [];
  const importShapes = new Map<string, number[]>();
  for (const vi of graphInputs) {
    const onnxName = vi.name ?? '';
    const spec = inputSpec(vi);
    const name = state.uniqueModuleName(onnxName || `input_${specs.length}`);
    const node = state.graph.placeholder(name, { name });
    const example = examples && Object.hasOwn(examples, onnxName) ? examples[onnxName] : undefined;
    const requested = Object.hasOwn(inputShapes, onnxName) ? inputShapes[onnxName] : undefined;
    const option = requested ? 'inputShapes' : 'exampleInputs';
    const shape = importShape(declaredInput(vi), requested ?? example?.shape, option, defaulted);
    importShapes.set(onnxName, shape);
    const size = ImportLimits.count(shape);
    if (!example && size > maxElements) {
      const from = requested ? 'is given the shape' : 'declares shape';
      throw new OnnxLimitError(
        `importOnnx: input '${onnxName}' ${from} [${shape.join(', ')}]${requested ? ' by inputShapes' : ' in its dim_value fields'} (${Number.isFinite(size) ? size : 'too many'} elements), ` +
          `more than maxElements = ${maxElements}; the import computes the model once at that size. ` +
          `If the model is trusted, raise the cap: importOnnx(model, { maxElements: ${Number.isFinite(size) ? size : '...'} }).`,
      );
    }
    const data =
      spec.dtype === 'float32'
        ? new Float32Array(size)
        : spec.dtype === 'bool'
          ? new Uint8Array(size)
          : new Int32Array(size);
    if (!example) state.limits.spend(`input '${onnxName}'`, shape);
    const ex = example ?? new Tensor({ data, shape, dtype: spec.dtype });
    values.set(onnxName, { kind: 'dyn', node, ex, dynBatch: spec.shape?.[0] === null });
    state.probe.input(node, ex, spec.shape?.[0] === null);
    specs.push({ name, onnxName, ...spec });
    state.modules.set(name, null as unknown as Module); // reserve the name
  }
  for (const s of specs) state.modules.delete(s.name);

  try {
    const fused = findBiasAdds(g, values);
    state.fusedBias = fused.bias;
    const patterns = findModuleFusions(g, values);
    const unsupported: UnsupportedNode[] = [];
    // Example values are dropped after their last reader, so the import holds only the live ones.
    const lastUse = new Map<string, number>();
    g.node.forEach((n, index) => {
      for (const i of n.input ?? []) lastUse.set(i, index);
    });
    for (const o of g.output ?? []) lastUse.set(o.name ?? '', Infinity);
    const release = (n: NodeMsg, index: number) => {
      for (const i of n.input ?? []) if (lastUse.get(i) === index) values.delete(i);
      for (const o of n.output ?? []) if (!lastUse.has(o)) values.delete(o);
    };
    g.node.forEach((n, index) => {
      importNode(n, index);
      release(n, index);
    });
    function importNode(n: NodeMsg, index: number): void {
      const opType = n.op_type ?? '';
      const domain = n.domain ?? '';
      const name = nodeName(n, index);
      const pattern = patterns.heads.get(n);
      if (pattern) {
        // the pattern's module is called where its first node stood, under that node's name
        const x = values.get(pattern.input);
        const inOrder = [...pattern.nodes].sort((a, b) => g.node!.indexOf(a) - g.node!.indexOf(b));
        state.importedNames = inOrder.flatMap((k) => (k.name ? [k.name] : []));
        const module = x ? pattern.module(x.kind === 'const' ? x.t : x.ex) : null;
        if (x && module) values.set(pattern.output, state.callModule(name, module, [x]));
        else if (x) for (const k of pattern.nodes) patterns.members.delete(k); // import the nodes one by one
      }
      if (patterns.members.has(n)) return;
      // a layer with a folded bias Add answers to both names
      state.importedNames = [n, fused.addOf.get(n)].flatMap((k) => (k?.name ? [k.name] : []));
      const aliasOf = fused.skip.get(n);
      if (aliasOf !== undefined) {
        const v = values.get(aliasOf);
        if (v) values.set(n.output![0]!, v);
        return;
      }
      const fail = (reason: string): void => {
        unsupported.push({ name, opType, domain, opset, reason });
      };
      if (domain === QTK_VISUAL_DOMAIN) {
        fail(
          "a node of QTK's visualisation export (exportQuantizedOnnx), which describes a module and computes nothing; load the QTK model file, or export the model with exportOnnx",
        );
        return;
      }
      if (domain !== '' && domain !== 'ai.onnx') {
        fail(`domain '${domain}' is not supported`);
        return;
      }
      checkFloatAttributes(n, name);
      // own properties only: an op_type such as 'constructor' or 'toString' is an unknown operator, not Object's
      const handler = Object.hasOwn(handlers, opType) ? handlers[opType] : undefined;
      if (!handler) {
        fail(Object.hasOwn(REFUSED_ONNX_OPS, opType) ? REFUSED_ONNX_OPS[opType]!(n) : 'operator not supported');
        return;
      }
      const inputs = (n.input ?? []).map((i) => (i === '' ? null : (values.get(i) ?? undefined)));
      if (inputs.some((v) => v === undefined)) return; // fed by a node that already failed
      const attrs: Attrs = new Map((n.attribute ?? []).map((a) => [a.name ?? '', a]));
      const ctx = new NodeContext(state, n, name, opset, attrs, inputs as (Val | null)[]);
      let outs: Val[];
      try {
        outs = handler(ctx);
      } catch (e) {
        if (e instanceof Unsupported) {
          fail(e.message);
          return;
        }
        if (e instanceof OnnxError) throw e;
        throw new OnnxError(`importOnnx: node '${name}' (${opType}) failed: ${(e as Error).message}`, { cause: e });
      }
      (n.output ?? []).forEach((o, i) => {
        if (o && outs[i]) values.set(o, outs[i]!);
      });
    }
    if (unsupported.length > 0) throw new UnsupportedOnnxOpError(unsupported);

    const outs = (g.output ?? []).map((o) => {
      const v = values.get(o.name ?? '');
      if (!v) throw new OnnxFormatError(`importOnnx: graph output '${o.name}' is produced by no node`);
      return v.kind === 'dyn' ? v.node : state.constNode(v.t, sanitizeName(o.name ?? 'output'));
    });
    state.graph.output(outs.length === 1 ? outs[0]! : outs);
  } catch (e) {
    throw withDefaultedDimsAdvice(e, defaulted, importShapes);
  }

  const root = new OnnxModel();
  for (const [name, m] of state.modules) root.registerModule(name, m);
  const gm = new OnnxGraphModule(root, state.graph, { constants: state.constants, className: g.name || 'OnnxModel' });
  gm.inputSpecs = specs;
  gm.outputNames = (g.output ?? []).map((o) => o.name ?? '');
  gm.eval();
  return gm;
}

/**
 * An import error after free input dims were set to 1 gets what to do: the dims it defaulted and the
 * option that gives the real shape (recorded on the error, so a CLI can say it in its own terms).
 * Errors about the file itself or the budget keep their own advice.
 */
function withDefaultedDimsAdvice(
  e: unknown,
  defaulted: readonly DefaultedDim[],
  shapes: ReadonlyMap<string, number[]>,
): unknown {
  if (defaulted.length === 0 || !(e instanceof OnnxError)) return e;
  // budget, format and attribute errors are about the file or the cap, not the size it was computed at
  if (!(e instanceof UnsupportedOnnxOpError) && e.constructor !== OnnxError) return e;
  const advice = defaultedDimsAdvice(defaulted, shapes);
  e.message = `${e.message}\n${advice}`;
  e.defaultedDims = { dims: defaulted, importShapes: Object.fromEntries(shapes), advice };
  return e;
}
