import { renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { GraphModule, type Argument, type Node } from '@qtk/ir';
import type { Module } from '@qtk/nn';
import { Tensor, noGrad, traceables } from '@qtk/tensor';
import { OnnxExportError } from './errors.js';
import { OnnxBuilder } from './export-builder.js';
import { exportModule, type ExportStep } from './export-modules.js';
import { DataType, encodeModel, type ValueInfoMsg } from './onnx-schema.js';

export interface ExportOnnxOptions {
  /** ai.onnx opset, 11 to 17 (default 13). */
  opset?: number;
  /** Names of the graph inputs (default: the GraphModule's placeholder names). */
  inputNames?: string[];
  /** Names of the graph outputs (default `output`, or `output_0`, `output_1`, ...). */
  outputNames?: string[];
  /** Declare dim 0 of inputs and outputs as the symbolic `batch` (default true). */
  dynamicBatch?: boolean;
}

const IR_VERSION: Record<number, number> = { 11: 6, 12: 7, 13: 7, 14: 7, 15: 8, 16: 8, 17: 8 };

function subAt(gm: GraphModule, path: string): Module {
  return path === '' ? gm : gm.getSubmodule(path);
}

function attrAt(gm: GraphModule, path: string): unknown {
  const parts = path.split('.');
  let owner: Module = gm;
  for (const p of parts.slice(0, -1)) owner = owner.getChild(p)!;
  const last = parts[parts.length - 1]!;
  return owner.getChild(last) ?? (owner as unknown as Record<string, unknown>)[last];
}

function mapValues(a: Argument, env: Map<Node, unknown>): unknown {
  if (Array.isArray(a)) return a.map((x) => mapValues(x as Argument, env));
  if (a && typeof a === 'object' && (a as object).constructor?.name === 'Node') return env.get(a as Node);
  if (a && typeof a === 'object' && !(a instanceof Tensor)) {
    return Object.fromEntries(Object.entries(a as Record<string, Argument>).map(([k, v]) => [k, mapValues(v, env)]));
  }
  return a;
}

/** The tensors among a node's arguments (nested lists included), in order, with their ONNX names. */
function tensorInputs(args: readonly Argument[], names: Map<Node, string[]>, b: OnnxBuilder, base: string, env: Map<Node, unknown>): string[] {
  const out: string[] = [];
  const visit = (a: unknown) => {
    if (Array.isArray(a)) a.forEach(visit);
    else if (a && typeof a === 'object' && (a as object).constructor?.name === 'Node') {
      const n = names.get(a as Node);
      if (!n || n.length !== 1) {
        if (env.get(a as Node) instanceof Tensor) throw new OnnxExportError(`exportOnnx: no ONNX value for node '${(a as Node).name}'`);
        return;
      }
      out.push(n[0]!);
    } else if (a instanceof Tensor) out.push(b.tensor(a, `${base}_const`));
  };
  args.forEach(visit);
  return out;
}

function scalarOrTensor(b: OnnxBuilder, v: unknown, name: string, names: string[], i: number): string {
  if (typeof v === 'number') return b.floatConst([v], `${name}_scalar`, []);
  return names[i]!;
}

const BINARY: Record<string, string> = { add: 'Add', sub: 'Sub', mul: 'Mul', div: 'Div', pow: 'Pow' };
const UNARY: Record<string, string> = { relu: 'Relu', sigmoid: 'Sigmoid', tanh: 'Tanh', neg: 'Neg', exp: 'Exp', log: 'Log', sqrt: 'Sqrt', abs: 'Abs', reciprocal: 'Reciprocal', contiguous: 'Identity' };

/** Functional ops and tensor methods (args[0] is the tensor for methods) as ONNX nodes. */
function exportCall(op: string, s: ExportStep, rawArgs: readonly Argument[]): string[] {
  const { b, name, args } = s;
  const x = s.inputs[0]!;
  const x0 = args[0] as Tensor;
  if (BINARY[op]) {
    // Tensor operands are in `inputs` in order; numbers become scalar initializers.
    let k = 0;
    const ins = [0, 1].map((i) => (args[i] instanceof Tensor ? s.inputs[k++]! : scalarOrTensor(b, args[i], name, s.inputs, 0)));
    return b.node(BINARY[op]!, ins, name);
  }
  if (UNARY[op]) return b.node(UNARY[op]!, [x], name);
  const norm = (a: number) => (a < 0 ? a + x0.ndim : a);
  switch (op) {
    case 'matmul':
      return b.node('MatMul', s.inputs.slice(0, 2), name);
    case 'cat':
    case 'onnx.concat':
      return b.node('Concat', s.inputs, name, { axis: (args[1] as number | undefined) ?? 0 });
    case 'softmax':
    case 'logSoftmax':
      return b.node(op === 'softmax' ? 'Softmax' : 'LogSoftmax', [x], name, { axis: norm((args[1] as number | undefined) ?? -1) });
    case 'flatten':
    case 'reshape':
    case 'view':
    case 'onnx.reshape':
    case 'onnx.flatten': {
      const out = s.out as Tensor;
      const shape = out.shape.map((d, i) => (i === 0 && s.batch !== null && x0.shape[0] === s.batch && d === s.batch ? 0 : d));
      return b.node('Reshape', [x, b.intConst(shape, `${name}_shape`)], name);
    }
    case 'permute':
    case 'onnx.transpose':
      return b.node('Transpose', [x], name, { perm: (args[1] as number[] | null) ?? x0.shape.map((_, i) => x0.ndim - 1 - i) });
    case 'transpose': {
      const perm = x0.shape.map((_, i) => i);
      const d0 = norm((args[1] as number | undefined) ?? -2);
      const d1 = norm((args[2] as number | undefined) ?? -1);
      [perm[d0], perm[d1]] = [perm[d1]!, perm[d0]!];
      return b.node('Transpose', [x], name, { perm });
    }
    case 'relu6':
      return b.node('Clip', [x, b.floatConst([0], `${name}_min`, []), b.floatConst([6], `${name}_max`, [])], name);
    case 'clamp': {
      const lo = args[1] as number | null | undefined;
      const hi = args[2] as number | null | undefined;
      return b.node('Clip', [x, lo == null ? '' : b.floatConst([lo], `${name}_min`, []), hi == null ? '' : b.floatConst([hi], `${name}_max`, [])], name);
    }
    case 'mean':
    case 'sum': {
      const ax = args[1] as number | number[] | undefined;
      const axes = (ax === undefined ? x0.shape.map((_, i) => i) : typeof ax === 'number' ? [ax] : ax).map(norm);
      const keepdims = args[2] ? 1 : 0;
      if (op === 'sum' && b.opset >= 13) return b.node('ReduceSum', [x, b.intConst(axes, `${name}_axes`)], name, { keepdims });
      return b.node(op === 'mean' ? 'ReduceMean' : 'ReduceSum', [x], name, { axes, keepdims });
    }
    case 'unsqueeze':
    case 'squeeze': {
      const a = args[1];
      const axes = a === undefined ? null : (typeof a === 'number' ? [a] : (a as number[])).map((v) => (v < 0 ? v + (op === 'unsqueeze' ? x0.ndim + 1 : x0.ndim) : v));
      const opType = op === 'unsqueeze' ? 'Unsqueeze' : 'Squeeze';
      if (b.opset >= 13) return b.node(opType, axes ? [x, b.intConst(axes, `${name}_axes`)] : [x], name);
      return b.node(opType, [x], name, { axes: axes ?? undefined });
    }
    case 'getitem':
      return [];
    default:
      void rawArgs;
      throw new OnnxExportError(`exportOnnx: node '${name}' calls '${op}', which has no ONNX form yet`);
  }
}

function valueInfo(name: string, t: Tensor, dynamicBatch: boolean): ValueInfoMsg {
  const elem = t.dtype === 'float32' ? DataType.FLOAT : t.dtype === 'bool' ? DataType.BOOL : DataType.INT64;
  return {
    name,
    type: { tensor_type: { elem_type: elem, shape: { dim: t.shape.map((d, i) => (i === 0 && dynamicBatch ? { dim_param: 'batch' } : { dim_value: d })) } } },
  };
}

/** Serializes a float GraphModule to ONNX model bytes, running it once on `exampleInputs` for shapes. */
export function exportOnnxBytes(gm: GraphModule, exampleInputs: Tensor | readonly Tensor[], options: ExportOnnxOptions = {}): Uint8Array {
  const opset = options.opset ?? 13;
  if (!IR_VERSION[opset]) throw new OnnxExportError(`exportOnnx: opset must be 11 to 17, got ${opset}`);
  const dynamicBatch = options.dynamicBatch ?? true;
  const inputs = exampleInputs instanceof Tensor ? [exampleInputs] : [...exampleInputs];
  const b = new OnnxBuilder(opset);
  const env = new Map<Node, unknown>();
  const names = new Map<Node, string[]>();
  const graph = gm.graph;
  const placeholders = graph.placeholders;
  if (placeholders.length !== inputs.length) throw new OnnxExportError(`exportOnnx: the model takes ${placeholders.length} inputs, got ${inputs.length} example inputs`);
  const inputNames = options.inputNames ?? placeholders.map((p) => p.name);
  inputNames.forEach((n) => b.reserve(n));
  const batch = dynamicBatch && inputs[0] && inputs[0].ndim > 0 ? inputs[0].shape[0]! : null;
  const graphInputs: ValueInfoMsg[] = [];
  let outputsMsg: ValueInfoMsg[] = [];
  const wasTraining = gm.training;
  gm.eval();
  try {
    noGrad(() => {
      for (const node of graph.nodes) {
        const args = node.args.map((a) => mapValues(a, env));
        let out: unknown;
        const step = (): ExportStep => ({ b, inputs: tensorInputs(node.args, names, b, node.name, env), args, out, name: node.name, path: node.target, batch });
        switch (node.op) {
          case 'placeholder': {
            const i = placeholders.indexOf(node);
            env.set(node, inputs[i]);
            names.set(node, [inputNames[i]!]);
            graphInputs.push(valueInfo(inputNames[i]!, inputs[i]!, dynamicBatch));
            continue;
          }
          case 'get_attr': {
            out = attrAt(gm, node.target);
            env.set(node, out);
            if (out instanceof Tensor) names.set(node, [b.tensor(out, node.target)]);
            continue;
          }
          case 'call_module': {
            const m = subAt(gm, node.target);
            out = node.method ? (m as unknown as Record<string, (...a: unknown[]) => unknown>)[node.method]!(...args) : m.call(...args);
            env.set(node, out);
            names.set(node, exportModule(m, step(), node.method));
            continue;
          }
          case 'call_function': {
            const entry = traceables.get(node.target);
            out = entry.fn(...args);
            env.set(node, out);
            const isTensors = out instanceof Tensor || (Array.isArray(out) && out.length > 0 && out.every((t) => t instanceof Tensor));
            if (!isTensors) {
              // Shape arithmetic (x.shape[0], ...) runs here in JS; reshape targets take the example's values.
              names.set(node, []);
            } else if (node.target === 'getitem') {
              const src = node.args[0] as Node;
              const srcNames = names.get(src);
              if (!srcNames) throw new OnnxExportError(`exportOnnx: getitem '${node.name}' of a value without ONNX outputs`);
              names.set(node, [srcNames[args[1] as number]!]);
            } else if (node.target === 'split') {
              const parts = out as Tensor[];
              const sizes = parts.map((t) => t.shape[(args[2] as number) < 0 ? (args[2] as number) + (args[0] as Tensor).ndim : ((args[2] as number) ?? 0)]!);
              const axis = (args[2] as number | undefined) ?? 0;
              const ins = [step().inputs[0]!];
              const attrs: Record<string, number | number[]> = { axis };
              if (opset >= 13) ins.push(b.intConst(sizes, `${node.name}_split`));
              else attrs.split = sizes;
              names.set(node, b.node('Split', ins, node.name, attrs, parts.length));
            } else names.set(node, exportCall(node.target, step(), node.args));
            continue;
          }
          case 'call_method': {
            const [self, ...rest] = args as [Record<string, (...a: unknown[]) => unknown>, ...unknown[]];
            out = self[node.target]!(...rest);
            env.set(node, out);
            names.set(node, out instanceof Tensor || Array.isArray(out) ? exportCall(node.target, step(), node.args) : []);
            continue;
          }
          case 'output': {
            const value = args[0];
            const outs = Array.isArray(value) ? value : [value];
            const outNodes = Array.isArray(node.args[0]) ? (node.args[0] as Node[]) : [node.args[0] as Node];
            const outNames = options.outputNames ?? (outs.length === 1 ? ['output'] : outs.map((_, i) => `output_${i}`));
            outputsMsg = outNodes.map((n, i) => {
              const src = names.get(n)?.[0];
              const t = outs[i];
              if (!src || !(t instanceof Tensor)) throw new OnnxExportError(`exportOnnx: output ${i} is not a tensor computed by the graph`);
              b.reserve(outNames[i]!);
              b.node('Identity', [src], outNames[i]!, {}, [outNames[i]!]);
              return valueInfo(outNames[i]!, t, dynamicBatch);
            });
          }
        }
      }
    });
  } finally {
    if (wasTraining) gm.train();
  }
  return encodeModel({
    ir_version: IR_VERSION[opset],
    producer_name: 'qtk',
    producer_version: '0.1.0',
    opset_import: [{ domain: '', version: opset }],
    graph: { name: gm.className, node: b.nodes, initializer: b.initializers, input: graphInputs, output: outputsMsg },
  });
}

/**
 * Exports a float GraphModule to an ONNX file (written to a temporary file, then renamed into place),
 * with named inputs and outputs and, by default, a dynamic batch dimension. Returns the bytes.
 */
export function exportOnnx(gm: GraphModule, exampleInputs: Tensor | readonly Tensor[], path: string, options: ExportOnnxOptions = {}): Uint8Array {
  const bytes = exportOnnxBytes(gm, exampleInputs, options);
  const tmp = `${path}.${process.pid}.${Date.now()}.tmp`;
  try {
    writeFileSync(tmp, bytes);
    renameSync(tmp, path);
  } catch (e) {
    try {
      unlinkSync(tmp);
    } catch {
      /* nothing to clean up */
    }
    throw new OnnxExportError(`exportOnnx: cannot write '${path}': ${(e as Error).message}`, { cause: e });
  }
  return bytes;
}
