// The importer's functions (functions.ts, array-functions.ts) in the op catalog (@qtk/tensor), by the names
// graphs record them under. onnx.layerNormStats (LayerNormalization's extra outputs) stands for no op.
import { hasOp, registerFunctionOp, type CallImplementation } from '@qtk/tensor';

const REDUCE_OPS: Readonly<Record<string, string>> = {
  mean: 'ReduceMean',
  sum: 'ReduceSum',
  max: 'ReduceMax',
  min: 'ReduceMin',
};

function reduceOp(kind: unknown): string | null {
  const op = REDUCE_OPS[String(kind)] ?? `Reduce${String(kind).charAt(0).toUpperCase()}${String(kind).slice(1)}`;
  return hasOp(op) ? op : null;
}

const ONNX_FUNCTION_OPS: readonly CallImplementation[] = [
  { name: 'onnx.reshape', op: 'Reshape' },
  { name: 'onnx.flatten', op: 'Flatten', attrs: (c) => ({ axis: c.args[1] }) },
  { name: 'onnx.slice', op: 'Slice' },
  { name: 'onnx.pad', op: 'Pad', attrs: (c) => ({ mode: c.args[2] }) },
  { name: 'onnx.gather', op: 'Gather', attrs: (c) => ({ axis: c.args[2] }) },
  { name: 'onnx.transpose', op: 'Transpose' },
  { name: 'onnx.squeeze', op: 'Squeeze' },
  { name: 'onnx.unsqueeze', op: 'Unsqueeze' },
  // every reduction the importer emits gets its own output scale, ReduceMax too
  {
    name: 'onnx.reduce',
    op: (c) => reduceOp(c.args[1]),
    attrs: (c) => ({ ...(c.args[2] == null ? {} : { axes: c.args[2] }), keepdims: Boolean(c.args[3]) }),
    ownOutputScale: true,
  },
  { name: 'onnx.clip', op: 'Clip' },
  { name: 'onnx.prelu', op: 'PRelu' },
  { name: 'onnx.hardSigmoid', op: 'HardSigmoid', attrs: (c) => ({ alpha: c.args[1], beta: c.args[2] }) },
  { name: 'onnx.cast', op: 'Cast' },
  {
    name: 'onnx.softmaxCoerced',
    op: (c) => (c.args[2] === true ? 'LogSoftmax' : 'Softmax'),
    attrs: (c) => ({ axis: c.args[1] }),
    ownOutputScale: true,
  },
  { name: 'onnx.globalMaxPool', op: 'GlobalMaxPool' },
  { name: 'onnx.onesMask', op: 'Dropout' },
  { name: 'onnx.expand', op: 'Expand' },
  { name: 'onnx.tile', op: 'Tile' },
  { name: 'onnx.instanceNorm', op: 'InstanceNormalization' },
  { name: 'onnx.mod', op: 'Mod' },
  { name: 'onnx.scatterND', op: 'ScatterND' },
  { name: 'onnx.avgPoolExcludePad', op: 'AveragePool', attrs: (c) => ({ kernelSize: c.args[1] }) },
  { name: 'onnx.avgPoolDilated', op: 'AveragePool', attrs: (c) => ({ kernelSize: c.args[1] }) },
];

let registered = false;

/** Registers the importer's functions in the op catalog; runs when the package loads, idempotent. */
export function registerOnnxOps(): void {
  if (registered) return;
  registered = true;
  for (const entry of ONNX_FUNCTION_OPS) registerFunctionOp(entry);
}

registerOnnxOps();
