import { defineCapabilities, opsWithImpl, spatialDimsIn } from '@qtk/spec';

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
    { op: 'Conv', impl: 'integer', fusable: CONV_FUSABLE, constraints: [spatialDimsIn(2)] },
    { op: 'ConvTranspose', impl: 'integer', fusable: CONV_FUSABLE, constraints: [spatialDimsIn(2)] },
    {
      op: 'Gemm',
      impl: 'integer',
      fusable: CONV_FUSABLE,
      constraints: [
        { kind: 'note', text: 'computed as a 1×1 Conv2d over [N, K, 1, 1]: the same integers as a Conv2d' },
      ],
    },
    ...opsWithImpl('integer', 'Add', 'Sub', 'Mul', 'Concat'),
    { op: 'Split', impl: 'passthrough' },
    { op: 'ReduceMean', impl: 'integer', constraints: [{ kind: 'note', text: 'over the channel axis' }] },
    { op: 'ReduceSum', impl: 'integer' },
    ...opsWithImpl('table', 'Exp', 'Sigmoid', 'Tanh', 'Silu', 'Gelu'),
    { op: 'AveragePool', impl: 'integer', constraints: [{ kind: 'max', attr: 'kernelSize', value: 7 }] },
    { op: 'MaxPool', impl: 'passthrough' },
    { op: 'Resize', impl: 'integer', constraints: [{ kind: 'oneOf', attr: 'mode', values: ['nearest', 'bilinear'] }] },
    { op: 'Pad', impl: 'passthrough', constraints: [{ kind: 'oneOf', attr: 'mode', values: ['constant'] }] },
    ...opsWithImpl('passthrough', 'DepthToSpace', 'ChannelShuffle'),
    { op: 'Reshape', impl: 'passthrough', constraints: [{ kind: 'note', text: 'only where free (no data movement)' }] },
    ...opsWithImpl('passthrough', 'Flatten', 'Relu'),
  ],
});
