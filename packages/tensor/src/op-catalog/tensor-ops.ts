// @qtk/tensor's implementations in the op catalog: its traced functions (traceable-ops.ts) and
// Tensor methods, by the names a traced graph records. Creation ops, losses and casts stand for no op.
import { registerFunctionOp, registerMethodOp, type CallImplementation, type CallSite } from './op-catalog.js';

type Attrs = (call: CallSite) => Record<string, unknown>;

const arg = (call: CallSite, i: number): unknown => call.args[i];
const convAttrs =
  (spatialDims: number): Attrs =>
  () => ({ spatialDims });
const reduceAttrs: Attrs = (call) => (arg(call, 1) === undefined ? {} : { axes: arg(call, 1) });
const modeOf = (v: unknown, fallback: string): string => (typeof v === 'string' ? v : fallback);

// [traced name, op, attributes, ownOutputScale override]
type Row = readonly [name: string, op: string, attrs?: Attrs, ownOutputScale?: boolean];

const CALLS: readonly Row[] = [
  ['add', 'Add'],
  ['sub', 'Sub'],
  ['mul', 'Mul'],
  ['div', 'Div'],
  ['pow', 'Pow'],
  ['maximum', 'Max'],
  ['minimum', 'Min'],
  ['eq', 'Equal'],
  ['gt', 'Greater'],
  ['lt', 'Less'],
  ['ge', 'GreaterOrEqual'],
  ['le', 'LessOrEqual'],
  ['neg', 'Neg'],
  ['exp', 'Exp'],
  ['log', 'Log'],
  ['sqrt', 'Sqrt'],
  ['rsqrt', 'Rsqrt'],
  ['reciprocal', 'Reciprocal'],
  ['abs', 'Abs'],
  ['relu', 'Relu'],
  ['sum', 'ReduceSum', reduceAttrs],
  ['mean', 'ReduceMean', reduceAttrs],
  ['max', 'ReduceMax', reduceAttrs],
  ['min', 'ReduceMin', reduceAttrs],
  ['argmax', 'ArgMax'],
  ['argmin', 'ArgMin'],
  ['reshape', 'Reshape'],
  ['view', 'Reshape'],
  ['permute', 'Transpose'],
  ['transpose', 'Transpose'],
  ['expand', 'Expand'],
  ['matmul', 'MatMul'],
  ['linear', 'Gemm'],
  ['conv1d', 'Conv', convAttrs(1)],
  ['conv2d', 'Conv', convAttrs(2)],
  ['conv3d', 'Conv', convAttrs(3)],
  ['convTranspose1d', 'ConvTranspose', convAttrs(1)],
  ['convTranspose2d', 'ConvTranspose', convAttrs(2)],
  ['clamp', 'Clip'],
  ['relu6', 'Clip', () => ({ min: 0, max: 6 })],
  ['leakyRelu', 'LeakyRelu'],
  ['prelu', 'PRelu'],
  ['elu', 'Elu'],
  ['selu', 'Selu'],
  ['sigmoid', 'Sigmoid'],
  ['tanh', 'Tanh'],
  ['silu', 'Silu'],
  ['gelu', 'Gelu'],
  ['hardsigmoid', 'HardSigmoid'],
  ['hardswish', 'HardSwish'],
  ['softplus', 'Softplus'],
  ['round', 'Round'],
  ['floor', 'Floor'],
  ['sign', 'Sign'],
  ['ceil', 'Ceil'],
  ['erf', 'Erf'],
  ['sin', 'Sin'],
  ['cos', 'Cos'],
  ['logicalNot', 'Not'],
  ['logicalAnd', 'And'],
  ['logicalOr', 'Or'],
  ['logicalXor', 'Xor'],
  ['where', 'Where'],
  ['softmax', 'Softmax'],
  ['logSoftmax', 'LogSoftmax'],
  ['cat', 'Concat'],
  ['split', 'Split'],
  ['slice', 'Slice'],
  ['flatten', 'Flatten'],
  ['squeeze', 'Squeeze'],
  ['unsqueeze', 'Unsqueeze'],
  ['maxPool2d', 'MaxPool'],
  ['avgPool2d', 'AveragePool', (call) => ({ kernelSize: arg(call, 1) })],
  ['adaptiveAvgPool2d', 'AdaptiveAveragePool'],
  [
    'interpolate',
    'Resize',
    (call) => ({ mode: modeOf((arg(call, 1) as { mode?: unknown } | undefined)?.mode, 'nearest') }),
  ],
  // the low-level resize keeps its input's scale (prepare never gave it a fake-quant of its own)
  ['resize', 'Resize', undefined, false],
  ['pad', 'Pad', (call) => ({ mode: modeOf(arg(call, 2), 'constant') })],
  ['batchNorm', 'BatchNormalization'],
  ['layerNorm', 'LayerNormalization'],
];

/** Names that are traced functions only; every other row is both a function and a Tensor method. */
const FUNCTION_ONLY = new Set([
  'linear',
  'conv1d',
  'conv2d',
  'conv3d',
  'convTranspose1d',
  'convTranspose2d',
  'cat',
  'maxPool2d',
  'avgPool2d',
  'adaptiveAvgPool2d',
  'interpolate',
  'resize',
  'pad',
  'batchNorm',
  'layerNorm',
  'logicalNot',
  'logicalAnd',
  'logicalOr',
  'logicalXor',
]);
/** Tensor methods with no traced function of the same name. */
const METHOD_ONLY = new Set(['view']);

let registered = false;

/** Registers @qtk/tensor's functions and methods; runs when the package loads, idempotent. */
export function registerTensorOps(): void {
  if (registered) return;
  registered = true;
  for (const [name, op, attrs, ownOutputScale] of CALLS) {
    const impl: CallImplementation = {
      name,
      op,
      ...(attrs ? { attrs } : {}),
      ...(ownOutputScale !== undefined ? { ownOutputScale } : {}),
    };
    if (!METHOD_ONLY.has(name)) registerFunctionOp(impl);
    if (!FUNCTION_ONLY.has(name)) registerMethodOp(impl);
  }
}

registerTensorOps();
