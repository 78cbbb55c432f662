import { GraphModule, type Argument, type Node, symbolicTrace } from '@qtk/ir';
import { Module } from '@qtk/nn';
import { Tensor } from '@qtk/tensor';
import { OnnxExportError } from './errors.js';
import { OnnxBuilder } from './export-builder.js';
import { exportCall } from './export-functions.js';
import { exportModule, type ExportStep } from './export-modules.js';
import { exactFloatRuleOf, isModelKindExported, moduleExportRuleOf, runExportSetups } from './export-rules.js';
import { type ExampleInput, type ExportValue, exportValueOf } from './export-values.js';
import { runNodes, subAt } from '@qtk/ir';
import { encodeModel, type NodeMsg, type ValueInfoMsg } from './onnx-schema.js';

export interface ExportOnnxOptions {
  /** ai.onnx opset, 11 to 21 (default 13). */
  opset?: number;
  /** Names of the graph inputs (default: the GraphModule's placeholder names). */
  inputNames?: string[];
  /** Names of the graph outputs (default `output`, or `output_0`, `output_1`, ...). */
  outputNames?: string[];
  /** Declare dim 0 of inputs and outputs as the symbolic `batch` (default true). */
  dynamicBatch?: boolean;
  /**
   * How float modules are written: 'standard' ONNX ops (the runtime's own float kernels), or 'exact'
   * forms that compute QTK's float results bit for bit where one is registered (float64 arithmetic in
   * QTK's order). Default 'exact' for fixed-point models (their float CPU ops feed integers), else
   * 'standard'.
   */
  floatForm?: 'standard' | 'exact';
  /**
   * Called once, after the export's walk over the example, with every node's value on it by node name: the
   * model's own forward on the example, for a caller that needs it too (and need not run the model again).
   */
  onNodeValues?: (values: ReadonlyMap<string, unknown>) => void;
  /**
   * Extends the graph before it is encoded: given each node's ONNX value (by node name), the value infos of the
   * intermediate values, and the graph's input names, returns nodes to append and outputs to add after the model's
   * own (a calibration engine adds the values it observes, or reductions of them).
   */
  addOutputs?: (graph: ExportedGraph) => {
    readonly nodes?: readonly NodeMsg[];
    readonly outputs: readonly ValueInfoMsg[];
  };
}

/** What addOutputs sees of the exported graph. */
export interface ExportedGraph {
  /** The ONNX value of each single-tensor node, by node name. */
  readonly valueOf: ReadonlyMap<string, string>;
  /** The type and shape of each intermediate value, by value name. */
  readonly valueInfo: ReadonlyMap<string, ValueInfoMsg>;
  readonly inputs: readonly string[];
  readonly outputs: readonly string[];
}

const IR_VERSION: Record<number, number> = {
  11: 6,
  12: 7,
  13: 7,
  14: 7,
  15: 8,
  16: 8,
  17: 8,
  18: 8,
  19: 9,
  20: 9,
  21: 10,
};

/** The tensors among a node's arguments (nested lists included), in order, with their ONNX names. */
function tensorInputs(
  args: readonly Argument[],
  names: Map<Node, string[]>,
  b: OnnxBuilder,
  base: string,
  env: ReadonlyMap<Node, unknown>,
): string[] {
  const out: string[] = [];
  const visit = (a: unknown) => {
    if (Array.isArray(a)) a.forEach(visit);
    else if (a && typeof a === 'object' && (a as object).constructor?.name === 'Node') {
      const n = names.get(a as Node);
      const v = env.get(a as Node);
      // a node of several values (split) stands for its list of tensors
      if (n && n.length > 1 && Array.isArray(v) && v.length === n.length && v.every(isTensorValue)) {
        out.push(...n);
        return;
      }
      if (n?.length !== 1) {
        if (isTensorValue(v)) throw new OnnxExportError(`exportOnnx: no ONNX value for node '${(a as Node).name}'`);
        return;
      }
      out.push(n[0]!);
    } else if (a instanceof Tensor) out.push(b.tensor(a, `${base}_const`));
  };
  args.forEach(visit);
  return out;
}

/** Metadata key of the exported model: JSON pairs [QTK node name, ONNX value name] in execution order. */
export const NODE_VALUES_KEY = 'qtk.node_values';

/** A float Tensor, or a value of a registered kind (a fixed-point QTensor: its integers, in their storage type). */
function isTensorValue(v: unknown): boolean {
  return exportValueOf(v) !== undefined;
}

/**
 * The type and shape of a value. With a free batch, an inner value's dims are left unknown: the batch may sit
 * on any axis there (a sequence-first attention's [L, N, E], a reshape's [N·heads, L, d]), and a static dim
 * declared where the batch is makes onnxruntime fold the shapes at the export's batch.
 */
function valueInfo(name: string, value: ExportValue, dynamicBatch: boolean, inner = false): ValueInfoMsg {
  const t = value.data;
  const elem = value.elemType;
  return {
    name,
    type: {
      tensor_type: {
        elem_type: elem,
        shape: {
          dim: t.shape.map((d, i) =>
            inner && dynamicBatch ? {} : i === 0 && dynamicBatch ? { dim_param: 'batch' } : { dim_value: d },
          ),
        },
      },
    },
  };
}

/**
 * Refuses a QAT or fixed-point model (its recorded kind) when no package registered the rules that export its
 * kind: without @qtk/onnx-deploy a QAT Conv would be written as its float Conv, a wrong model without an error.
 */
function refuseUnregisteredKind(gm: GraphModule): void {
  const kind = gm.meta?.kind;
  if (typeof kind !== 'string' || kind === 'float' || isModelKindExported(kind)) return;
  throw new OnnxExportError(
    `exportOnnx: '${gm.className}' is a ${kind} model, and no export rules for ${kind} models are registered: import '@qtk/onnx-deploy' (its QDQ and integer export rules) before exporting it`,
  );
}

/**
 * Serializes a GraphModule (a plain Module is traced first) to ONNX model bytes, running it once on
 * `exampleInputs` for shapes: float ONNX for a float model, QDQ ONNX for a QAT or calibrated one,
 * integer ONNX for a fixed-point one (see exportOnnx).
 */
export function exportOnnxBytes(
  model: GraphModule | Module,
  exampleInputs: ExampleInput | readonly ExampleInput[],
  options: ExportOnnxOptions = {},
): Uint8Array {
  if (!(model instanceof Module))
    throw new OnnxExportError('exportOnnx: expected a Module or GraphModule (a float, QAT or fixed-point model)');
  const gm = model instanceof GraphModule ? model : symbolicTrace(model);
  const opset = options.opset ?? 13;
  if (!IR_VERSION[opset]) throw new OnnxExportError(`exportOnnx: opset must be 11 to 21, got ${opset}`);
  const dynamicBatch = options.dynamicBatch ?? true;
  const exactFloat = (options.floatForm ?? (gm.meta?.kind === 'fixed-point' ? 'exact' : 'standard')) === 'exact';
  refuseUnregisteredKind(gm);
  const inputs: ExampleInput[] = Array.isArray(exampleInputs) ? [...exampleInputs] : [exampleInputs as ExampleInput];
  const inputValues = inputs.map((x, i) => {
    const v = exportValueOf(x);
    if (!v)
      throw new OnnxExportError(
        `exportOnnx: example input ${i} is neither a Tensor nor a registered value (a fixed-point QTensor needs @qtk/onnx-deploy imported)`,
      );
    return v;
  });
  const b = new OnnxBuilder(opset);
  const names = new Map<Node, string[]>();
  const graph = gm.graph;
  const placeholders = graph.placeholders;
  if (placeholders.length !== inputs.length)
    throw new OnnxExportError(
      `exportOnnx: the model takes ${placeholders.length} inputs, got ${inputs.length} example inputs`,
    );
  const inputNames = options.inputNames ?? placeholders.map((p) => p.name);
  if (inputNames.length !== placeholders.length || new Set(inputNames).size !== inputNames.length) {
    throw new OnnxExportError(
      `exportOnnx: inputNames must be ${placeholders.length} distinct names, got [${inputNames.join(', ')}]`,
    );
  }
  inputNames.forEach((n) => {
    b.reserve(n);
  });
  const outArg = graph.outputNode?.args[0];
  const outCount = Array.isArray(outArg) ? outArg.length : 1;
  const outNames =
    options.outputNames ?? (outCount === 1 ? ['output'] : Array.from({ length: outCount }, (_, i) => `output_${i}`));
  if (outNames.length !== outCount)
    throw new OnnxExportError(`exportOnnx: the model has ${outCount} outputs, got ${outNames.length} outputNames`);
  // Reserved before any value is named, so no intermediate value takes an output's name.
  outNames.forEach((n) => {
    b.reserve(n);
  });
  const batch = dynamicBatch && inputs[0] && inputs[0].shape.length > 0 ? inputs[0].shape[0]! : null;
  const graphInputs: ValueInfoMsg[] = [];
  // Every node's ONNX value, so a runtime's intermediates can be matched to QTK's (compareWithRuntime).
  const nodeValues: [string, string][] = [];
  const valueInfos: ValueInfoMsg[] = [];
  let outputsMsg: ValueInfoMsg[] = [];
  const undoSetups = runExportSetups(gm);
  try {
    runNodes(gm, inputs, (node, out, args, env) => {
      const step = (): ExportStep => ({
        b,
        inputs: tensorInputs(node.args, names, b, node.name, env),
        args,
        out,
        name: node.name,
        path: node.target,
        batch,
      });
      switch (node.op) {
        case 'placeholder': {
          const i = placeholders.indexOf(node);
          names.set(node, [inputNames[i]!]);
          graphInputs.push(valueInfo(inputNames[i]!, inputValues[i]!, dynamicBatch));
          return;
        }
        case 'get_attr':
          if (out instanceof Tensor) names.set(node, [b.tensor(out, node.target)]);
          return;
        case 'call_module': {
          const m = subAt(gm, node.target);
          const rule = (exactFloat ? exactFloatRuleOf(m) : undefined) ?? moduleExportRuleOf(m);
          names.set(
            node,
            rule ? rule({ ...step(), module: m, method: node.method }) : exportModule(m, step(), node.method),
          );
          return;
        }
        case 'call_function': {
          const isTensors =
            out instanceof Tensor || (Array.isArray(out) && out.length > 0 && out.every((t) => t instanceof Tensor));
          if (!isTensors) {
            // Shape arithmetic (x.shape[0], ...) runs here in JS; reshape targets take the example's values.
            names.set(node, []);
          } else if (node.target === 'getitem') {
            const srcNames = names.get(node.args[0] as Node);
            if (!srcNames)
              throw new OnnxExportError(`exportOnnx: getitem '${node.name}' of a value without ONNX outputs`);
            names.set(node, [srcNames[args[1] as number]!]);
          } else if (node.target === 'split') {
            const parts = out as Tensor[];
            const axis = (args[2] as number | undefined) ?? 0;
            const dim = axis < 0 ? axis + (args[0] as Tensor).ndim : axis;
            const sizes = parts.map((t) => t.shape[dim]!);
            const ins = [step().inputs[0]!];
            const attrs: Record<string, number | number[]> = { axis };
            if (opset >= 13) ins.push(b.intConst(sizes, `${node.name}_split`));
            else attrs.split = sizes;
            names.set(node, b.node('Split', ins, node.name, attrs, parts.length));
          } else names.set(node, exportCall(node.target, step(), node.args));
          return;
        }
        case 'call_method':
          names.set(
            node,
            out instanceof Tensor || Array.isArray(out) ? exportCall(node.target, step(), node.args) : [],
          );
          return;
        case 'output': {
          const outs = Array.isArray(out) ? out : [out];
          const outNodes = Array.isArray(node.args[0]) ? (node.args[0] as Node[]) : [node.args[0] as Node];
          outputsMsg = outNodes.map((n, i) => {
            const src = names.get(n)?.[0];
            const t = exportValueOf(outs[i]);
            if (!src || !t) throw new OnnxExportError(`exportOnnx: output ${i} is not a tensor computed by the graph`);
            b.node('Identity', [src], outNames[i]!, {}, [outNames[i]!]);
            return valueInfo(outNames[i]!, t, dynamicBatch);
          });
          options.onNodeValues?.(new Map([...env].map(([n, v]) => [n.name, v])));
          for (const [n, v] of env) {
            const onnxNames = names.get(n);
            const value = exportValueOf(v);
            if (n.op === 'placeholder' || n.op === 'get_attr' || onnxNames?.length !== 1 || !value) continue;
            nodeValues.push([n.name, onnxNames[0]!]);
            valueInfos.push(valueInfo(onnxNames[0]!, value, dynamicBatch, true));
          }
        }
      }
    });
  } finally {
    undoSetups();
  }
  const added = options.addOutputs?.({
    valueOf: new Map(nodeValues),
    valueInfo: new Map(valueInfos.map((v) => [v.name!, v])),
    inputs: inputNames,
    outputs: outNames,
  });
  return encodeModel({
    ir_version: IR_VERSION[opset],
    producer_name: 'qtk',
    producer_version: '0.1.0',
    opset_import: [{ domain: '', version: opset }],
    graph: {
      name: gm.className,
      node: added?.nodes ? [...b.nodes, ...added.nodes] : b.nodes,
      initializer: b.initializers,
      input: graphInputs,
      output: added ? [...outputsMsg, ...added.outputs] : outputsMsg,
      value_info: valueInfos,
    },
    metadata_props: [{ key: NODE_VALUES_KEY, value: JSON.stringify(nodeValues) }],
  });
}
