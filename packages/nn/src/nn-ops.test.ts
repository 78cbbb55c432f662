import { opOfModule } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import * as nn from './index.js';

/** Every module class @qtk/nn exports that stands for an op, and the ONNX op it is. */
const EXPECTED: Readonly<Record<string, string>> = {
  Linear: 'Gemm',
  Conv1d: 'Conv',
  Conv2d: 'Conv',
  Conv3d: 'Conv',
  ConvTranspose1d: 'ConvTranspose',
  ConvTranspose2d: 'ConvTranspose',
  BatchNorm1d: 'BatchNormalization',
  BatchNorm2d: 'BatchNormalization',
  BatchNorm3d: 'BatchNormalization',
  SyncBatchNorm: 'BatchNormalization',
  LayerNorm: 'LayerNormalization',
  ReLU: 'Relu',
  ReLU6: 'Clip',
  Hardtanh: 'Clip',
  LeakyReLU: 'LeakyRelu',
  PReLU: 'PRelu',
  Sigmoid: 'Sigmoid',
  Tanh: 'Tanh',
  SiLU: 'Silu',
  GELU: 'Gelu',
  Hardsigmoid: 'HardSigmoid',
  Hardswish: 'HardSwish',
  ELU: 'Elu',
  SELU: 'Selu',
  Softplus: 'Softplus',
  Softmax: 'Softmax',
  LogSoftmax: 'LogSoftmax',
  MaxPool2d: 'MaxPool',
  AvgPool2d: 'AveragePool',
  AdaptiveAvgPool2d: 'AdaptiveAveragePool',
  Upsample: 'Resize',
  PixelShuffle: 'DepthToSpace',
  PixelUnshuffle: 'SpaceToDepth',
  ChannelShuffle: 'ChannelShuffle',
  Dropout: 'Dropout',
  Identity: 'Identity',
  Flatten: 'Flatten',
};

/** Exported module classes that are no op: containers, stubs, losses, user code, FloatFunctional (its methods are). */
const NOT_OPS = new Set([
  'Module',
  'Sequential',
  'ModuleList',
  'ModuleDict',
  'Lambda',
  'QuantStub',
  'DeQuantStub',
  'FloatFunctional',
  'CrossEntropyLoss',
  'MSELoss',
  'L1Loss',
]);

const moduleClasses = (Object.entries(nn) as [string, unknown][]).filter(
  (e): e is [string, new (...a: never[]) => nn.Module] =>
    typeof e[1] === 'function' && (e[1] === nn.Module || e[1].prototype instanceof nn.Module),
);

describe("@qtk/nn's modules in the op catalog", () => {
  it('every exported module class is either an op (the expected ONNX op) or listed as none', () => {
    const unclassified = moduleClasses.map(([n]) => n).filter((n) => !(n in EXPECTED) && !NOT_OPS.has(n));
    expect(unclassified).toEqual([]);
    for (const [name, cls] of moduleClasses) {
      // the op does not depend on constructor arguments: a bare instance of the class will do
      const match = opOfModule(Object.create(cls.prototype) as object);
      if (name in EXPECTED) expect([name, match?.op]).toEqual([name, EXPECTED[name]]);
      else if (name !== 'FloatFunctional') expect([name, match]).toEqual([name, null]);
    }
  });

  it('reports the attributes capability tables and marches read', () => {
    const conv = new nn.Conv2d(4, 8, 3, { stride: 2, padding: 1, groups: 2, dilation: 1 });
    expect(opOfModule(conv)?.attrs).toEqual({
      spatialDims: 2,
      kernelShape: [3, 3],
      stride: [2, 2],
      padding: [1, 1],
      dilation: [1, 1],
      groups: 2,
    });
    expect(opOfModule(new nn.ConvTranspose1d(2, 2, 3))?.attrs).toMatchObject({ spatialDims: 1, outputPadding: [0] });
    expect(opOfModule(new nn.ReLU6())?.attrs).toEqual({ min: 0, max: 6 });
    expect(opOfModule(new nn.AvgPool2d(5))?.attrs).toMatchObject({ kernelSize: [5, 5] });
    expect(opOfModule(new nn.Upsample({ scaleFactor: 2, mode: 'bilinear' }))?.attrs).toEqual({ mode: 'bilinear' });
  });

  it("FloatFunctional's methods are ops; output scales follow QTK's prepare", () => {
    const ff = new nn.FloatFunctional();
    expect(opOfModule(ff)).toBeNull();
    expect(['add', 'addScalar', 'cat', 'mean', 'matmul'].map((m) => opOfModule(ff, m)?.op)).toEqual([
      'Add',
      'Add',
      'Concat',
      'ReduceMean',
      'MatMul',
    ]);
    expect(opOfModule(ff, 'forward')).toBeNull();
    // nn.Upsample keeps its input's scale; a lone BatchNorm (it rescales each channel), Sigmoid and AvgPool2d get their own
    expect(opOfModule(new nn.BatchNorm2d(2))?.ownOutputScale).toBe(true);
    expect(opOfModule(new nn.Upsample({ scaleFactor: 2 }))?.ownOutputScale).toBe(false);
    expect(opOfModule(new nn.Sigmoid())?.ownOutputScale).toBe(true);
    expect(opOfModule(new nn.AvgPool2d(2))?.ownOutputScale).toBe(true);
    expect(opOfModule(new nn.ReLU())?.ownOutputScale).toBe(false);
  });
});
