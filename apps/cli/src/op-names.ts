import type { GraphModule, Node } from '@qtk/ir';
import type { Module } from '@qtk/nn';

/** Capability-table op (ONNX name) of a module class created by importOnnx or found in a traced model. */
const MODULE_OPS: Readonly<Record<string, string>> = {
  Conv1d: 'Conv',
  Conv2d: 'Conv',
  Conv3d: 'Conv',
  ConvTranspose1d: 'ConvTranspose',
  ConvTranspose2d: 'ConvTranspose',
  Linear: 'Gemm',
  BatchNorm1d: 'BatchNormalization',
  BatchNorm2d: 'BatchNormalization',
  BatchNorm3d: 'BatchNormalization',
  ReLU: 'Relu',
  ReLU6: 'Clip',
  Hardtanh: 'Clip',
  LeakyReLU: 'LeakyRelu',
  PReLU: 'PRelu',
  Sigmoid: 'Sigmoid',
  Tanh: 'Tanh',
  ELU: 'Elu',
  SELU: 'Selu',
  SiLU: 'Silu',
  GELU: 'Gelu',
  Softplus: 'Softplus',
  Hardsigmoid: 'HardSigmoid',
  Hardswish: 'HardSwish',
  Softmax: 'Softmax',
  LogSoftmax: 'LogSoftmax',
  LayerNorm: 'LayerNormalization',
  MaxPool2d: 'MaxPool',
  AvgPool2d: 'AveragePool',
  AdaptiveAvgPool2d: 'AdaptiveAveragePool',
  Upsample: 'Resize',
  Flatten: 'Flatten',
  Identity: 'Identity',
};

/** Functions of the importer (and traced tensor ops) whose ONNX name is not their name capitalised. */
const FUNCTION_OPS: Readonly<Record<string, string>> = {
  cat: 'Concat',
  concat: 'Concat',
  matmul: 'MatMul',
  getitem: 'Split',
  globalMaxPool: 'GlobalMaxPool',
  onesMask: 'Dropout',
  prelu: 'PRelu',
  hardSigmoid: 'HardSigmoid',
  softmax: 'Softmax',
  maxPool2d: 'MaxPool',
  avgPool2d: 'AveragePool',
  relu: 'Relu',
  flatten: 'Flatten',
  view: 'Reshape',
  reshape: 'Reshape',
  permute: 'Transpose',
  transpose: 'Transpose',
};

const REDUCE_OPS: Readonly<Record<string, string>> = { mean: 'ReduceMean', sum: 'ReduceSum', max: 'ReduceMax' };

/** The op a node's module or function stands for, with the attributes the capability tables constrain. */
export interface NodeOp {
  /** Module class, function or method name, as the graph shows it. */
  readonly label: string;
  /** Capability-table op name. */
  readonly op: string;
  readonly attrs: Record<string, unknown>;
}

function moduleAt(gm: GraphModule, node: Node): Module | null {
  try {
    return gm.getSubmodule(node.target);
  } catch {
    return null;
  }
}

/** Maps a node of an imported (float) graph to its capability-table op; null for placeholders, outputs, constants. */
export function nodeOp(gm: GraphModule, node: Node): NodeOp | null {
  if (node.op === 'placeholder' || node.op === 'output' || node.op === 'get_attr') return null;
  if (node.op === 'call_module') {
    const m = moduleAt(gm, node);
    const cls = m?.constructor.name ?? node.target;
    const label = node.method ? `${cls}.${node.method}` : cls;
    const op = node.method ? capitalise(node.method) : (MODULE_OPS[cls] ?? cls);
    return { label, op, attrs: moduleAttrs(cls, m) };
  }
  const name = node.target;
  const label = node.op === 'call_method' ? `Tensor.${name}` : name;
  // the importer's functions are registered as 'onnx.<name>'
  const base = name.slice(name.lastIndexOf('.') + 1);
  if (base === 'reduce') {
    const kind = String(node.args[1]);
    return { label, op: REDUCE_OPS[kind] ?? `Reduce${capitalise(kind)}`, attrs: {} };
  }
  if (base === 'softmaxCoerced') return { label, op: node.args[2] === true ? 'LogSoftmax' : 'Softmax', attrs: {} };
  return { label, op: FUNCTION_OPS[base] ?? capitalise(base), attrs: {} };
}

function capitalise(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}

function moduleAttrs(cls: string, m: Module | null): Record<string, unknown> {
  const o = m as unknown as Record<string, unknown> | null;
  if (!o) return {};
  if (/^Conv(Transpose)?[123]d$/.test(cls)) return { spatialDims: Number(/([123])d$/.exec(cls)![1]) };
  if (cls === 'AvgPool2d' && o.kernelSize !== undefined) return { kernelSize: o.kernelSize };
  if (cls === 'Upsample' && o.mode !== undefined) return { mode: o.mode };
  return {};
}
