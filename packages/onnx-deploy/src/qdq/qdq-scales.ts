// The scales sidecar of a QDQ model: every DequantizeLinear's scale(s), zero point(s), integer type
// and axis, keyed by the name of the value it produces (the dequantized tensor the graph computes
// with), read back from the model bytes so it always describes the file it sits beside.
import { OnnxError, DataType, decodeModel, type NodeMsg, type TensorMsg, readTensorProto } from '@qtk/onnx';

export const QDQ_SCALES_FORMAT = 'qtk.qdq-scales';
/** Layout version of the sidecar JSON. */
export const QDQ_SCALES_VERSION = 1;

/** One quantized tensor of a QDQ model. */
export interface QdqTensorScale {
  /** 'activation': quantized by a QuantizeLinear as the model runs; 'weight': stored as integers. */
  kind: 'activation' | 'weight';
  /** ONNX element type of the integers. */
  dtype: 'int8' | 'int16' | 'uint8' | 'uint16';
  /** One scale per tensor, or one per index of `axis` (float32 values). */
  scale: number[];
  /** Zero point(s), as many as scales (0 for QTK's symmetric quantization). */
  zeroPoint: number[];
  /** The channel axis of per-channel scales (normalized to be non-negative when the rank is known), else null. */
  axis: number | null;
  /** The integer tensor: a QuantizeLinear output, or a weight initializer. */
  quantized: string;
  /** For activations, the float value that is quantized (before any range clip); null for weights. */
  source: string | null;
}

/** The sidecar JSON: `tensors` keyed by the ONNX name of each dequantized value. */
export interface QdqScales {
  format: typeof QDQ_SCALES_FORMAT;
  version: typeof QDQ_SCALES_VERSION;
  /** The model's ai.onnx opset. */
  opset: number;
  tensors: Record<string, QdqTensorScale>;
}

const DTYPE_OF: Partial<Record<number, QdqTensorScale['dtype']>> = {
  [DataType.INT8]: 'int8',
  [DataType.INT16]: 'int16',
  [DataType.UINT8]: 'uint8',
  [DataType.UINT16]: 'uint16',
};

/**
 * The scales of every DequantizeLinear of an ONNX model (the bytes exportOnnx returns, or any QDQ
 * model whose scales and zero points are initializers), keyed by the dequantized value's name.
 */
export function qdqScales(onnx: Uint8Array): QdqScales {
  const model = decodeModel(onnx);
  const graph = model.graph;
  if (!graph) throw new OnnxError('qdqScales: the bytes hold no ONNX graph');
  const inits = new Map<string, TensorMsg>((graph.initializer ?? []).map((t) => [t.name ?? '', t]));
  const producer = new Map<string, NodeMsg>();
  for (const n of graph.node ?? []) for (const o of n.output ?? []) producer.set(o, n);
  const rankOf = new Map<string, number>();
  for (const vi of [...(graph.value_info ?? []), ...(graph.input ?? []), ...(graph.output ?? [])])
    if (vi.name && vi.type?.tensor_type?.shape?.dim) rankOf.set(vi.name, vi.type.tensor_type.shape.dim.length);
  for (const t of graph.initializer ?? []) if (t.name) rankOf.set(t.name, (t.dims ?? []).length);
  const constant = (name: string | undefined, what: string, node: string) => {
    const t = name ? inits.get(name) : undefined;
    if (!t) throw new OnnxError(`qdqScales: the ${what} of DequantizeLinear '${node}' is not an initializer`);
    return t;
  };
  const tensors: Record<string, QdqTensorScale> = {};
  for (const n of graph.node ?? []) {
    if (n.op_type !== 'DequantizeLinear' || (n.domain ?? '') !== '') continue;
    const name = n.name ?? '';
    const [q, s, zp] = n.input ?? [];
    const scale = readTensorProto(constant(s, 'scale', name)).numbers;
    const zpTensor = zp ? constant(zp, 'zero point', name) : null;
    const zeroPoint = zpTensor ? readTensorProto(zpTensor).numbers : scale.map(() => 0);
    const elem = zpTensor?.data_type ?? inits.get(q ?? '')?.data_type ?? DataType.UINT8;
    const dtype = DTYPE_OF[elem];
    if (!dtype) throw new OnnxError(`qdqScales: DequantizeLinear '${name}' reads integers of ONNX type ${elem}`);
    const axisAttr = n.attribute?.find((a) => a.name === 'axis')?.i;
    const perChannel = (constant(s, 'scale', name).dims ?? []).length === 1;
    const rank = rankOf.get(q ?? '');
    let axis: number | null = null;
    if (perChannel) {
      axis = axisAttr ?? 1; // ONNX's default axis
      if (axis < 0 && rank !== undefined) axis += rank;
    }
    const quantizer = producer.get(q ?? '');
    let source: string | null = null;
    if (quantizer?.op_type === 'QuantizeLinear') {
      source = quantizer.input?.[0] ?? null;
      // the range clip of a narrowed fake-quant (quantizeDequantize names it after its QuantizeLinear)
      const clip = source ? producer.get(source) : undefined;
      if (clip?.op_type === 'Clip' && clip.name === `${quantizer.name?.replace(/_quantize$/, '')}_clip`)
        source = clip.input?.[0] ?? source;
    }
    tensors[n.output?.[0] ?? name] = {
      kind: quantizer?.op_type === 'QuantizeLinear' ? 'activation' : 'weight',
      dtype,
      scale,
      zeroPoint,
      axis,
      quantized: q ?? '',
      source,
    };
  }
  const opset = model.opset_import?.find((o) => (o.domain ?? '') === '')?.version ?? 0;
  return { format: QDQ_SCALES_FORMAT, version: QDQ_SCALES_VERSION, opset, tensors };
}

/** The conventional sidecar path of a model file: `<model path>.scales.json`. */
export function qdqScalesPath(modelPath: string): string {
  return `${modelPath}.scales.json`;
}
