import { defineCapabilities } from '@qtk/spec';

// a fused ReLU6 is the catalog's Clip (Clip(0, 6))
const CONV_FUSABLE = ['BatchNormalization', 'Add', 'Relu', 'Clip'];

/** bernoulli2 (RDK X3), march-semantics.md §2: int8 activations, int32 only as high-precision output. */
export const BERNOULLI2_CAPABILITIES = defineCapabilities({
  version: 1,
  activationDtypes: ['qint8'],
  highPrecisionOutputDtypes: ['qint32'],
  weightDtypes: ['qint8'],
  weightPerChannel: true,
  rounding: 'half_up',
  ops: [
    {
      op: 'Conv',
      impl: 'integer',
      fusable: CONV_FUSABLE,
      constraints: [{ kind: 'oneOf', attr: 'spatialDims', values: [2] }],
    },
    {
      op: 'ConvTranspose',
      impl: 'integer',
      fusable: CONV_FUSABLE,
      constraints: [{ kind: 'oneOf', attr: 'spatialDims', values: [2] }],
    },
    {
      op: 'Gemm',
      impl: 'integer',
      fusable: CONV_FUSABLE,
      constraints: [
        { kind: 'note', text: 'computed as a 1×1 Conv2d over [N, K, 1, 1]: the same integers as a Conv2d' },
      ],
    },
    { op: 'Add', impl: 'integer' },
    { op: 'Sub', impl: 'integer' },
    { op: 'Mul', impl: 'integer' },
    { op: 'Concat', impl: 'integer' },
    { op: 'Split', impl: 'passthrough' },
    { op: 'ReduceMean', impl: 'integer', constraints: [{ kind: 'note', text: 'over the channel axis' }] },
    { op: 'ReduceSum', impl: 'integer' },
    { op: 'Exp', impl: 'table' },
    { op: 'Sigmoid', impl: 'table' },
    { op: 'Tanh', impl: 'table' },
    { op: 'Silu', impl: 'table' },
    { op: 'Gelu', impl: 'table' },
    { op: 'AveragePool', impl: 'integer', constraints: [{ kind: 'max', attr: 'kernelSize', value: 7 }] },
    { op: 'MaxPool', impl: 'passthrough' },
    { op: 'Resize', impl: 'integer', constraints: [{ kind: 'oneOf', attr: 'mode', values: ['nearest', 'bilinear'] }] },
    { op: 'Pad', impl: 'passthrough', constraints: [{ kind: 'oneOf', attr: 'mode', values: ['constant'] }] },
    { op: 'DepthToSpace', impl: 'passthrough' },
    { op: 'ChannelShuffle', impl: 'passthrough' },
    { op: 'Reshape', impl: 'passthrough', constraints: [{ kind: 'note', text: 'only where free (no data movement)' }] },
    { op: 'Flatten', impl: 'passthrough' },
    { op: 'Relu', impl: 'passthrough' },
  ],
});
