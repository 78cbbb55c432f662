import '@qtk/march-bayes';
import { calibrate, convertFx, modelToBytes, prepareQatFx } from '@qtk/core';
import { defaultQatOutQconfig, getDefaultQconfig, type QConfig, setFakeQuantize } from '@qtk/fake-quant';
import type { GraphModule } from '@qtk/ir';
import { InvalidArgumentError } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { compareModelFiles } from './compare-model-files.js';
import { randomInputs, TinyResNet } from '@qtk/test-models';

function fixedOf(model: TinyResNet, moduleName: Record<string, QConfig | null> = {}): GraphModule {
  model.eval();
  const qconfig = getDefaultQconfig('fake_quant', 'fake_quant', 'min_max', 'min_max');
  const qat = prepareQatFx(
    model,
    { global: qconfig, moduleName: { fc: defaultQatOutQconfig, ...moduleName } },
    { march: 'bayes', onWarning: () => {} },
  );
  calibrate(
    qat,
    [1, 2, 3].map((s) => randomInputs(s, 8)),
  );
  setFakeQuantize(qat, 'VALIDATION');
  return convertFx(qat, { march: 'bayes', onWarning: () => {} });
}

const ORDER = ['quant', 'relu0', '_generated_add_0', 'conv2', 'pool', 'flatten', 'fc', 'dequant'];

describe('compareModelFiles', () => {
  const a = fixedOf(new TinyResNet());
  const x = randomInputs(9, 2);

  it('finds a model and its own model-file bytes identical op by op', () => {
    const result = compareModelFiles(a, modelToBytes(a), x);
    expect(result.identical).toBe(true);
    expect(result.firstDifference).toBeNull();
    expect(result.ops.map((o) => o.name)).toEqual(ORDER);
    expect(result.ops.every((o) => o.identical && o.differing === 0 && o.maxRealDiff === 0)).toBe(true);
    expect(result.ops.find((o) => o.name === 'conv2')).toMatchObject({ maxIntDiff: 0, elements: 2 * 16 * 8 * 8 });
    expect(result.parameters).toEqual([]);
    expect(result.changedOps).toEqual([]);
    expect(JSON.parse(JSON.stringify(result))).toEqual(result);
  });

  it('points at the first op whose integers differ after one weight changed, and at that weight', () => {
    const changed = new TinyResNet();
    (changed.conv2.weight.values() as Float32Array)[0]! += 0.05;
    const result = compareModelFiles(a, fixedOf(changed), x);
    expect(result.identical).toBe(false);
    expect(result.firstDifference).toBe('conv2');
    const byName = new Map(result.ops.map((o) => [o.name, o]));
    for (const name of ['quant', 'relu0', '_generated_add_0']) expect(byName.get(name)!.identical).toBe(true);
    const conv2 = byName.get('conv2')!;
    expect(conv2.identical).toBe(false);
    expect(conv2.differing).toBeGreaterThan(0);
    expect(conv2.differing).toBeLessThan(conv2.elements);
    expect(conv2.maxIntDiff).toBeGreaterThanOrEqual(1);
    expect(conv2.maxRealDiff).toBeGreaterThan(0);
    expect(result.parameters).toEqual([
      { name: 'conv2.weight', status: 'changed', differing: 1, maxAbsDiff: expect.any(Number) },
    ]);
    // fed the first model's inputs, only conv2 differs: the ops after it inherit its difference
    expect(result.changedOps).toEqual(['conv2']);
    expect(conv2.sameInput).toEqual({ differing: conv2.differing, maxIntDiff: conv2.maxIntDiff });
    expect(byName.get('pool')!.identical).toBe(false);
    expect(byName.get('pool')!.sameInput).toEqual({ differing: 0, maxIntDiff: 0 });
    expect(byName.get('fc')!.sameInput).toEqual({ differing: 0, maxIntDiff: 0 });
    expect(result.onlyInA).toEqual([]);
    expect(result.onlyInB).toEqual([]);
  });

  it('reports the structure that changed: an op moved to float, with the ops added around it', () => {
    const result = compareModelFiles(a, fixedOf(new TinyResNet(), { conv2: null }), x);
    expect(result.firstDifference).toBe('conv2');
    expect(result.onlyInA).toEqual([]);
    expect(result.onlyInB).toEqual(['_generated_dequantize_0', '_generated_conv2_float_boundary_0']);
    expect(result.changes).toEqual([
      { name: 'conv2', field: 'type', a: 'FixedConv', b: 'Conv2d' },
      { name: 'conv2', field: 'dtype', a: 'qint8', b: 'float' },
    ]);
  });

  it('refuses anything but a GraphModule or model-file bytes', () => {
    expect(() => compareModelFiles(a, 'model.qtk' as unknown as Uint8Array, x)).toThrow(InvalidArgumentError);
  });
});
