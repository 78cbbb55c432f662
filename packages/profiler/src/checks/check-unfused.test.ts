import '@qtk/march-bayes';
import '@qtk/march-bernoulli2';
import { prepareQatFx } from '@qtk/core';
import { defaultQatQconfig } from '@qtk/fake-quant';
import { fuseFx } from '@qtk/fusion';
import { BatchNorm2d } from '@qtk/nn';
import { type MarchBackendV1, marches } from '@qtk/spec';
import { describe, expect, it } from 'vitest';
import { checkUnfusedOperations } from './check-unfused.js';
import { SharedConvNet, SharedNormNet, UnfusedNet } from '@qtk/test-models';

describe('checkUnfusedOperations', () => {
  it('lists every chain the fusion table fuses in a float model, by node name and pattern', () => {
    const model = new UnfusedNet();
    const result = checkUnfusedOperations(model, { march: 'bayes' });
    expect(result).toEqual({
      version: 1,
      march: 'bayes',
      unfused: [
        {
          pattern: 'conv2d_bn_relu',
          nodes: ['conv0', 'bn0', 'relu0'],
          types: ['Conv2d', 'BatchNorm2d', 'ReLU'],
          fusedModule: 'relu0',
        },
        {
          pattern: 'conv2d_bn_add_relu',
          nodes: ['conv1', 'bn1', '_generated_add_0.add', 'relu1'],
          types: ['Conv2d', 'BatchNorm2d', 'FloatFunctional.add', 'ReLU'],
          fusedModule: '_generated_add_0',
        },
      ],
      blocked: [],
    });
    // the user's model is left as it was
    expect(model.bn0).toBeInstanceOf(BatchNorm2d);
    expect(JSON.parse(JSON.stringify(result))).toEqual(result);
  });

  it('finds nothing left to fuse in a fused or a prepared model', () => {
    expect(checkUnfusedOperations(fuseFx(new UnfusedNet(), { march: 'bayes' }), { march: 'bayes' }).unfused).toEqual(
      [],
    );
    const qat = prepareQatFx(new UnfusedNet(), { global: defaultQatQconfig }, { march: 'bayes', onWarning: () => {} });
    expect(checkUnfusedOperations(qat, { march: 'bayes' })).toEqual({
      version: 1,
      march: 'bayes',
      unfused: [],
      blocked: [],
    });
  });

  it('reports chains a shared conv or a shared BatchNorm keeps unfused, with the reason', () => {
    const conv = checkUnfusedOperations(new SharedConvNet(), { march: 'bernoulli2' });
    expect(conv.unfused).toEqual([]);
    expect(conv.blocked.map((b) => [b.pattern, b.nodes, b.reason])).toEqual([
      ['conv2d_relu', ['conv', 'relu'], 'shared-layer'],
      ['conv2d_bn', ['conv(1)', 'bn'], 'shared-layer'],
    ]);
    const norm = checkUnfusedOperations(new SharedNormNet(), { march: 'bayes' });
    expect(norm.unfused).toEqual([]);
    expect(norm.blocked.map((b) => [b.pattern, b.nodes, b.reason])).toEqual([
      ['conv2d_bn', ['conv0', 'bn'], 'shared-norm'],
      ['conv2d_bn', ['conv1', 'bn(1)'], 'shared-norm'],
    ]);
    expect(norm.blocked[0]!.detail).toContain("BatchNorm 'bn' is also called");
  });

  it('reports a chain the march does not fuse, and fuses what it can of it', () => {
    const bayes = marches.get('bayes');
    // a march whose Conv fuses nothing (BatchNorm absorption is a float rewrite, always allowed)
    const noConvFusion: MarchBackendV1 = {
      ...bayes,
      id: 'bayes-no-conv-fusion',
      capabilities: {
        ...bayes.capabilities,
        ops: bayes.capabilities.ops.map((o) => (o.op === 'Conv' ? { ...o, fusable: [] } : o)),
      },
    };
    const result = checkUnfusedOperations(new UnfusedNet(), { march: noConvFusion });
    expect(result.march).toBe('bayes-no-conv-fusion');
    expect(result.unfused.map((c) => [c.pattern, c.nodes])).toEqual([
      ['conv2d_bn', ['conv0', 'bn0']],
      ['conv2d_bn', ['conv1', 'bn1']],
    ]);
    expect(result.blocked.map((b) => [b.pattern, b.nodes, b.reason])).toEqual([
      ['conv2d_bn_relu', ['conv0', 'bn0', 'relu0'], 'march'],
      ['conv2d_bn_add_relu', ['conv1', 'bn1', '_generated_add_0.add', 'relu1'], 'march'],
    ]);
    expect(result.blocked[0]!.detail).toBe("march 'bayes-no-conv-fusion': 'Conv' does not list 'Relu' as fusable");
  });
});
