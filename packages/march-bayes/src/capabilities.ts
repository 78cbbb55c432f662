import { defineCapabilities, opsWithImpl, spatialDimsIn } from '@qtk/spec';

// a fused ReLU6 is the catalog's Clip (Clip(0, 6))
const CONV_FUSABLE = ['BatchNormalization', 'Add', 'Relu', 'Clip'];

/** bayes (RDK Ultra), march-semantics.md §2: int8 and int16 activations, int32 high-precision outputs. */
export const BAYES_CAPABILITIES = defineCapabilities({
  version: 1,
  activationDtypes: ['qint8', 'qint16'],
  highPrecisionOutputDtypes: ['qint32'],
  weightDtypes: ['qint8'],
  weightPerChannel: true,
  rounding: 'half_up',
  ops: [
    { op: 'Conv', impl: 'integer', fusable: CONV_FUSABLE, constraints: [spatialDimsIn(2, 3)] },
    { op: 'ConvTranspose', impl: 'integer', fusable: CONV_FUSABLE, constraints: [spatialDimsIn(2)] },
    { op: 'Gemm', impl: 'integer', fusable: CONV_FUSABLE },
    { op: 'MatMul', impl: 'integer' },
    ...opsWithImpl('integer', 'Add', 'Sub', 'Mul', 'Concat', 'ReduceMean', 'ReduceSum', 'Max', 'Min', 'Clip', 'Abs'),
    ...opsWithImpl('integer', 'Equal', 'Greater', 'Less', 'GreaterOrEqual', 'LessOrEqual'),
    { op: 'Split', impl: 'passthrough' },
    ...opsWithImpl(
      'segment_table',
      'Exp',
      'Sigmoid',
      'Tanh',
      'Silu',
      'Gelu',
      'Reciprocal',
      'Sqrt',
      'Rsqrt',
      'Log',
      'Pow',
      'Sin',
      'Erf',
      'Softplus',
      'Elu',
      'LeakyRelu',
      'PRelu',
      'HardSigmoid',
      'HardSwish',
    ),
    // [choice] cos is even, not odd: a segment table fits both halves of its range and stays 9 int16 steps off
    // over a few periods; an int8 table is exact to the step. docs/march-numerics.md, "Tables in conversion".
    { op: 'Cos', impl: 'table', dtypes: ['qint8'] },
    ...opsWithImpl('composite', 'Softmax', 'LayerNormalization', 'Div'),
    { op: 'AveragePool', impl: 'integer' },
    { op: 'AdaptiveAveragePool', impl: 'integer' },
    { op: 'MaxPool', impl: 'passthrough' },
    { op: 'Resize', impl: 'integer', constraints: [{ kind: 'oneOf', attr: 'mode', values: ['nearest', 'bilinear'] }] },
    { op: 'Pad', impl: 'passthrough', constraints: [{ kind: 'oneOf', attr: 'mode', values: ['constant'] }] },
    ...opsWithImpl(
      'passthrough',
      'DepthToSpace',
      'ChannelShuffle',
      'Reshape',
      'Flatten',
      'Relu',
      'Transpose',
      'Expand',
      'Tile',
      'Gather',
      'TopK',
      'Slice',
    ),
  ],
});
