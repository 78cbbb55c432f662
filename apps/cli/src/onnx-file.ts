// What an ONNX file is, read from its bytes without importing it: its inputs, whether it is a
// quantized (QDQ or integer) model, and whether QTK's export mapped its node values.
import { readFileSync } from 'node:fs';
import { DataType, decodeModel, type ModelMsg, NODE_VALUES_KEY, type ValueInfoMsg } from '@qtk/onnx';
import { CliError } from './io.js';
import { requireFile } from './model-input.js';

/** A graph input: its name, element type (TensorProto.DataType) and shape (null where free). */
export interface OnnxInput {
  readonly name: string;
  readonly elemType: number;
  readonly shape: (number | null)[] | null;
}

/** The form of an ONNX model: float, QDQ (QuantizeLinear / DequantizeLinear) or integer arithmetic. */
export interface OnnxForm {
  readonly kind: 'float' | 'qdq' | 'integer';
  /** What showed it (e.g. '4 QuantizeLinear nodes'); '' for float. */
  readonly evidence: string;
}

export interface OnnxFile {
  readonly path: string;
  readonly bytes: Uint8Array;
  readonly model: ModelMsg;
  readonly inputs: OnnxInput[];
  readonly form: OnnxForm;
  readonly opset: number | null;
  /** Whether the file carries QTK's node-to-value map (written by exportOnnx). */
  readonly hasNodeValues: boolean;
}

export const FORM_LABEL: Readonly<Record<OnnxForm['kind'], string>> = {
  float: 'float ONNX',
  qdq: 'QDQ ONNX',
  integer: 'integer ONNX',
};

const QDQ_OPS = new Set(['QuantizeLinear', 'DequantizeLinear', 'DynamicQuantizeLinear']);
const INTEGER_OPS = new Set([
  'ConvInteger',
  'MatMulInteger',
  'QLinearConv',
  'QLinearMatMul',
  'QLinearAdd',
  'QLinearMul',
  'QLinearAveragePool',
  'QLinearGlobalAveragePool',
  'QLinearSigmoid',
  'QLinearLeakyRelu',
  'QLinearConcat',
]);
// The storage types of quantized values; int64 is left out (shape and index arithmetic of float models).
const STORAGE_TYPES = new Set<number>([DataType.INT8, DataType.UINT8, DataType.INT16, DataType.UINT16, DataType.INT32]);

function counted(counts: Map<string, number>): string {
  return [...counts].map(([op, n]) => `${n} ${op} node${n > 1 ? 's' : ''}`).join(', ');
}

// Ops whose output describes their input's shape, not its values: what follows them is shape arithmetic.
const SHAPE_OPS = new Set(['Shape', 'Size']);

/**
 * The values computed from the graph inputs' contents: an input's, and every output of a node that reads one,
 * except through Shape / Size. A Cast of such a value to an integer type stores tensor data as integers; a Cast
 * of a shape or a constant (paddle2onnx casts shapes to int32) is index arithmetic of a float model.
 */
function dataValues(model: ModelMsg): Set<string> {
  const graph = model.graph;
  const initializers = new Set((graph?.initializer ?? []).map((t) => t.name));
  const data = new Set((graph?.input ?? []).map((v) => v.name ?? '').filter((n) => !initializers.has(n)));
  for (const node of graph?.node ?? []) {
    if (SHAPE_OPS.has(node.op_type ?? '')) continue;
    if ((node.input ?? []).some((i) => data.has(i))) for (const o of node.output ?? []) data.add(o);
  }
  return data;
}

/**
 * Float, QDQ or integer: QuantizeLinear / DequantizeLinear nodes make a QDQ model; integer ops
 * (ConvInteger, QLinear*, ...) or casts of the input's data to 8-, 16- or 32-bit integers (QTK's integer
 * export keeps fixed-point values in their storage types) an integer model.
 */
export function onnxFormOf(model: ModelMsg): OnnxForm {
  const qdq = new Map<string, number>();
  const integer = new Map<string, number>();
  const data = dataValues(model);
  for (const node of model.graph?.node ?? []) {
    const op = node.op_type ?? '';
    if (QDQ_OPS.has(op)) qdq.set(op, (qdq.get(op) ?? 0) + 1);
    else if (INTEGER_OPS.has(op)) integer.set(op, (integer.get(op) ?? 0) + 1);
    else if (op === 'Cast') {
      const to = node.attribute?.find((a) => a.name === 'to')?.i;
      if (to !== undefined && STORAGE_TYPES.has(to) && data.has(node.input?.[0] ?? ''))
        integer.set('integer Cast', (integer.get('integer Cast') ?? 0) + 1);
    }
  }
  if (integer.size > 0) return { kind: 'integer', evidence: counted(integer) };
  if (qdq.size > 0) return { kind: 'qdq', evidence: counted(qdq) };
  return { kind: 'float', evidence: '' };
}

function inputOf(v: ValueInfoMsg): OnnxInput {
  const t = v.type?.tensor_type;
  const dims = t?.shape?.dim;
  return {
    name: v.name ?? '',
    elemType: t?.elem_type ?? 0,
    shape: dims ? dims.map((d) => (d.dim_value !== undefined && d.dim_value > 0 ? d.dim_value : null)) : null,
  };
}

/** Reads and decodes an ONNX file; an unreadable or malformed file is a CliError naming it. */
export function readOnnxFile(path: string): OnnxFile {
  requireFile(path, 'ONNX file');
  return onnxFileOf(new Uint8Array(readFileSync(path)), path);
}

/** ONNX bytes read already (or exported just now), `path` naming them in messages. */
export function onnxFileOf(bytes: Uint8Array, path: string): OnnxFile {
  let model: ModelMsg;
  try {
    model = decodeModel(bytes);
  } catch (e) {
    throw new CliError(`${path} is not a valid ONNX file: ${(e as Error).message}`, { cause: e });
  }
  if (!model.graph) throw new CliError(`${path} is not an ONNX model: it holds no graph`);
  const initializers = new Set((model.graph.initializer ?? []).map((t) => t.name));
  const inputs = (model.graph.input ?? []).filter((v) => !initializers.has(v.name)).map(inputOf);
  const opset = model.opset_import?.find((o) => (o.domain ?? '') === '')?.version ?? null;
  return {
    path,
    bytes,
    model,
    inputs,
    form: onnxFormOf(model),
    opset,
    hasNodeValues: (model.metadata_props ?? []).some((p) => p.key === NODE_VALUES_KEY),
  };
}
