import {
  BatchNorm1d,
  BatchNorm2d,
  BatchNorm3d,
  Conv2d,
  Linear,
  Parameter,
  SyncBatchNorm,
  type BatchNormNd,
  type Module,
} from '@qtk/nn';
import { Generator, InvalidArgumentError, randn, tensor, type Tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { absorbBatchNorm, bnAbsorptionProblem, fuseLayerWithBatchNorm, type AbsorbingLayer } from './bn-absorption.js';
import { expectClose } from './testing/expect-close.js';
import { makeLayer, randomizeBatchNorm, shapesFor } from './testing/combo-net.js';

const NORM_FOR: Record<string, new (n: number, o?: object) => BatchNormNd> = {
  conv2d: BatchNorm2d,
  conv_transpose2d: BatchNorm2d,
  conv3d: BatchNorm3d,
  linear: BatchNorm1d,
};

describe('absorbBatchNorm', () => {
  it('computes W·γ/√(var+ε) and (b − mean)·γ/√(var+ε) + β (hand-computed)', () => {
    const lin = new Linear(1, 1);
    lin.weight = new Parameter(tensor([[2]]));
    lin.bias = new Parameter(tensor([1]));
    const bn = new BatchNorm1d(1, { eps: 1 });
    bn.runningMean!.values().set([3]);
    bn.runningVar!.values().set([3]); // √(3+1) = 2
    bn.weight!.values().set([4]); // s = 2
    bn.bias!.values().set([0.5]);
    const { weight, bias } = absorbBatchNorm(lin, bn);
    expect([...weight.values()]).toEqual([4]);
    expect([...bias.values()]).toEqual([(1 - 3) * 2 + 0.5]);
    expect(weight).toBeInstanceOf(Parameter);
    expect(lin.weight.values()[0]).toBe(2); // the layer is not changed
  });

  const cases: { family: string; groups: number; bias: boolean; affine: boolean; sync: boolean }[] = [];
  for (const family of ['conv2d', 'conv_transpose2d', 'conv3d', 'linear']) {
    for (const groups of family === 'linear' ? [1] : [1, 2]) {
      for (const bias of [true, false]) cases.push({ family, groups, bias, affine: !bias, sync: groups === 2 });
    }
  }

  it.each(cases)(
    '$family groups=$groups bias=$bias affine=$affine sync=$sync: bn(layer(x)) = fused(x) in eval to 1e-5',
    ({ family, groups, bias, affine, sync }) => {
      const g = new Generator(11);
      const layer = makeLayer(family, g, { groups, bias }) as AbsorbingLayer;
      const bn = sync ? new SyncBatchNorm(6, { affine }) : new NORM_FOR[family]!(6, { affine });
      randomizeBatchNorm(bn, g);
      (layer as Module).eval();
      bn.eval();
      const x = randn(shapesFor(family).x, { generator: g });
      const expected = bn.call((layer as Module).call(x) as Tensor);
      const fused = fuseLayerWithBatchNorm(layer, bn);
      expect(fused.constructor).toBe(layer.constructor);
      expect(fused.weight).not.toBe(layer.weight);
      expectClose((fused as Module).call(x) as Tensor, expected);
      expect(layer.bias === null).toBe(!bias); // original untouched
    },
  );

  it('refuses a BN without running statistics or with another channel count', () => {
    const conv = new Conv2d(2, 3, 1, { generator: new Generator(1) });
    expect(bnAbsorptionProblem(conv, new BatchNorm2d(3))).toBeNull();
    expect(bnAbsorptionProblem(conv, new BatchNorm2d(4))).toMatch(/4 features .* 3 output channels/);
    expect(bnAbsorptionProblem(conv, new BatchNorm2d(3, { trackRunningStats: false }))).toMatch(
      /no running statistics/,
    );
    expect(() => absorbBatchNorm(conv, new BatchNorm2d(4))).toThrow(InvalidArgumentError);
  });
});
