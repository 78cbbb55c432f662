import '@qtk/march-bayes';
import '@qtk/march-bernoulli2';
import { ConversionError, calibrate, convertFx, prepareQatFx } from '@qtk/core';
import { defaultQatOutQconfig, defaultQatQconfig, setFakeQuantize } from '@qtk/fake-quant';
import type { GraphModule } from '@qtk/ir';
import { Conv3d, type Module } from '@qtk/nn';
import { QConfigError } from '@qtk/spec';
import { Generator, rand } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { checkDeployDevice, HybridDictError, hybridPartitioner } from '@qtk/hybrid';
import { applyModelFixes } from './apply-model-fixes.js';
import { checkModel } from './check-model.js';
import { checkQconfig } from '../checks/check-qconfig.js';
import { CpuEndsNet, NestedSeluNet, SeluNet, TinyResNet } from '@qtk/test-models';

const inputs = (seed: number) =>
  rand([4, 3, 8, 8], { generator: new Generator(seed) })
    .mul(2)
    .sub(1);
const quiet = { onWarning: () => {} };

/** Prepares `model` on bernoulli2 with what applyModelFixes returned, hybrid partition included. */
function prepareFixed(model: Module, fixed: ReturnType<typeof applyModelFixes>): GraphModule {
  return prepareQatFx(model, fixed.qconfigDict, {
    march: 'bernoulli2',
    hybridDict: fixed.hybridDict,
    ...fixed.prepareOptions,
    partitioner: hybridPartitioner,
    ...quiet,
  });
}

/** Calibrates `qat` on two batches, converts it for bernoulli2 and runs it on a third: the output's shape. */
function convertedOutputShape(qat: GraphModule): readonly number[] {
  calibrate(qat, [inputs(1), inputs(2)]);
  setFakeQuantize(qat, 'VALIDATION');
  return (convertFx(qat, { march: 'bernoulli2', ...quiet }).call(inputs(3)) as { shape: readonly number[] }).shape;
}

describe('applyModelFixes', () => {
  it('turns the SELU and output-layer findings into a hybridDict, an int32 output qconfig and hybrid mode', () => {
    const model = new SeluNet();
    const options = { march: 'bernoulli2', qconfigDict: { global: defaultQatQconfig } } as const;
    const first = checkModel(model, options);
    expect(first.findings.map((f) => f.code)).toEqual(['unsupported-op', 'output-not-high-precision']);
    const fixed = applyModelFixes(model, first.findings, options);
    expect(fixed.hybridDict).toEqual({ moduleName: ['selu'] });
    expect(fixed.prepareOptions).toEqual({ hybrid: true });
    expect(fixed.unapplied).toEqual([]);
    const conv1 = fixed.qconfigDict.moduleName!.conv1!;
    expect(conv1.activation).toBeNull();
    expect(conv1.weight).toBe(defaultQatQconfig.weight);
    expect(fixed.qconfigDict.global).toBe(defaultQatQconfig);
    // the user's dict is not changed
    expect(options.qconfigDict).toEqual({ global: defaultQatQconfig });

    // as it is, conversion stops at the SELU
    const asIs = prepareQatFx(model, options.qconfigDict, { march: 'bernoulli2', ...quiet });
    calibrate(asIs, [inputs(1)]);
    setFakeQuantize(asIs, 'VALIDATION');
    expect(() => convertFx(asIs, { march: 'bernoulli2', ...quiet })).toThrow(ConversionError);

    const again = checkModel(model, { ...options, ...fixed.prepareOptions, ...fixed });
    expect(again.findings).toEqual([]);

    const qat = prepareFixed(model, fixed);
    expect(checkQconfig(qat).int32Outputs).toEqual(['conv1']);
    expect(convertedOutputShape(qat)).toEqual([4, 4, 8, 8]);
  });

  it('adds input QuantStubs and CPU entries for a model without stubs, so it prepares and converts', () => {
    const model = new CpuEndsNet(29);
    // as it is, prepare stops at the missing QuantStub
    expect(() => prepareQatFx(model, { global: defaultQatQconfig }, { march: 'bernoulli2', ...quiet })).toThrow(
      QConfigError,
    );
    const first = checkModel(model, { march: 'bernoulli2' });
    const fixed = applyModelFixes(model, first.findings, { march: 'bernoulli2' });
    expect(fixed.prepareOptions).toEqual({ hybrid: true, inputQuantStubs: true });
    expect(fixed.hybridDict).toEqual({ moduleName: ['selu', 'hswish'] });
    // the DeQuantStub hint is code; the fusions need nothing
    expect(fixed.unapplied.map((f) => f.code)).toEqual(['missing-dequant-stub', 'unfused-pattern', 'unfused-pattern']);
    const again = checkModel(model, {
      march: 'bernoulli2',
      qconfigDict: fixed.qconfigDict,
      hybridDict: fixed.hybridDict,
      ...fixed.prepareOptions,
    });
    // the CPU hardswish returns float values: no DeQuantStub needed any more
    expect(again.findings.map((f) => f.code)).toEqual(['unfused-pattern', 'unfused-pattern']);
    const qat = prepareFixed(model, fixed);
    expect(convertedOutputShape(qat)).toEqual([4, 4, 8, 8]);
  });

  it('renames a misspelt qconfig name to the module it meant and drops an unused type', () => {
    const model = new TinyResNet();
    const options = {
      march: 'bayes',
      qconfigDict: {
        global: defaultQatQconfig,
        moduleName: { fc1: defaultQatOutQconfig },
        moduleType: [[Conv3d, null]] as const,
      },
    };
    const first = checkModel(model, options);
    const fixed = applyModelFixes(model, first.findings, options);
    expect(Object.keys(fixed.qconfigDict.moduleName!)).toEqual(['fc']);
    // the entry meant for fc, already high precision, is kept as it was
    expect(fixed.qconfigDict.moduleName!.fc).toBe(defaultQatOutQconfig);
    expect(fixed.qconfigDict.moduleType).toBeUndefined();
    const again = checkModel(model, { march: 'bayes', qconfigDict: fixed.qconfigDict });
    expect(again.findings.map((f) => f.code)).toEqual(['unfused-pattern', 'unfused-pattern']);
    const qat = prepareQatFx(model, fixed.qconfigDict, { march: 'bayes', ...quiet });
    expect(checkQconfig(qat).int32Outputs).toEqual(['fc']);
  });

  it('turns on hybrid mode for a functional op, which puts only that op on the CPU', () => {
    const model = new NestedSeluNet();
    const options = { march: 'bernoulli2', qconfigDict: { global: defaultQatQconfig } } as const;
    const first = checkModel(model, options);
    const fixed = applyModelFixes(model, first.findings, options);
    expect(fixed.prepareOptions).toEqual({ hybrid: true });
    expect(fixed.hybridDict).toEqual({});
    const again = checkModel(model, { ...options, ...fixed.prepareOptions, qconfigDict: fixed.qconfigDict });
    expect(again.findings.map((f) => f.code)).toEqual(['unfused-pattern']);
    const qat = prepareQatFx(model, fixed.qconfigDict, {
      march: 'bernoulli2',
      ...fixed.prepareOptions,
      partitioner: hybridPartitioner,
      ...quiet,
    });
    const devices = checkDeployDevice(qat).nodes.map((n) => [n.name, n.device]);
    expect(devices).toEqual([
      ['block.relu', 'BPU'],
      ['selu', 'CPU'],
      ['flatten', 'BPU'],
      ['fc', 'BPU'],
    ]);
    const x = rand([2, 3, 4, 4], { generator: new Generator(5) });
    calibrate(qat, [x]);
    setFakeQuantize(qat, 'VALIDATION');
    const out = convertFx(qat, { march: 'bernoulli2', ...quiet }).call(x) as { shape: readonly number[] };
    expect(out.shape).toEqual([2, 3]);
  });

  it('corrects a misspelt hybridDict name, which prepare refuses', () => {
    const model = new SeluNet();
    const options = {
      march: 'bernoulli2',
      qconfigDict: { global: defaultQatQconfig },
      hybrid: true,
      hybridDict: { moduleName: ['sel'] },
    } as const;
    expect(() =>
      prepareQatFx(model, options.qconfigDict, { ...options, partitioner: hybridPartitioner, ...quiet }),
    ).toThrow(HybridDictError);
    const first = checkModel(model, options);
    expect(first.findings.map((f) => [f.code, f.severity, f.node, f.fix])).toEqual([
      ['unsupported-op', 'info', 'selu', { kind: 'hybrid', hybridDict: { moduleName: ['selu'] } }],
      [
        'unknown-hybrid-name',
        'error',
        'sel',
        { kind: 'hybrid', hybridDict: { moduleName: ['selu'], removeModuleName: ['sel'] } },
      ],
      [
        'output-not-high-precision',
        'warning',
        'conv1',
        { kind: 'qconfig', qconfigDict: { moduleName: { conv1: 'high-precision-output' } } },
      ],
    ]);
    const fixed = applyModelFixes(model, first.findings, options);
    expect(fixed.hybridDict).toEqual({ moduleName: ['selu'] });
    expect(options.hybridDict.moduleName).toEqual(['sel']);
    expect(checkModel(model, { ...options, ...fixed }).findings).toEqual([]);
    const qat = prepareFixed(model, fixed);
    expect(
      checkDeployDevice(qat)
        .nodes.filter((n) => n.device === 'CPU')
        .map((n) => [n.name, n.reason]),
    ).toEqual([['selu', 'hybridDict']]);
  });
});
