import '@qtk/march-bayes';
import '@qtk/march-bernoulli2';
import { prepareQatFx } from '@qtk/core';
import { hybridPartitioner } from '@qtk/hybrid';
import {
  defaultQat16bitQconfig,
  defaultQatOutQconfig,
  defaultQatQconfig,
  getDefaultQatQconfig,
  getDefaultQconfig,
} from '@qtk/fake-quant';
import { symbolicTrace } from '@qtk/ir';
import { type MarchBackendV1, marches } from '@qtk/spec';
import { InvalidArgumentError } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { checkQconfig } from './check-qconfig.js';
import { SeluNet, TinyResNet } from '@qtk/test-models';

const quiet = { onWarning: () => {} };

describe('checkQconfig', () => {
  it('lists dtypes, observers and per-channel weights per node, and the int16 and int32 outputs', () => {
    const fixed = getDefaultQatQconfig({ activationQkwargs: { observer: 'fixed_scale', scale: 1 / 64 } });
    const qat = prepareQatFx(
      new TinyResNet(),
      {
        global: defaultQatQconfig,
        moduleName: { conv2: defaultQat16bitQconfig, pool: fixed, fc: defaultQatOutQconfig },
      },
      { march: 'bayes', ...quiet },
    );
    const result = checkQconfig(qat);
    expect(result.version).toBe(1);
    expect(result.march).toBe('bayes');
    expect(result.nodes.map((n) => [n.name, n.type, n.inputDtypes, n.outputDtype])).toEqual([
      ['quant', 'QAT(QuantStub)', ['float'], 'qint8'],
      ['relu0', 'QAT(ConvAddReLU2d)', ['qint8'], 'qint8'],
      ['_generated_add_0', 'QAT(ConvAddReLU2d)', ['qint8'], 'qint8'],
      ['conv2', 'QAT(Conv2d)', ['qint8'], 'qint16'],
      ['pool', 'QAT(AdaptiveAvgPool2d)', ['qint16'], 'qint8'],
      ['flatten', 'Flatten', ['qint8'], 'qint8'],
      ['fc', 'QAT(Linear)', ['qint8'], 'qint32'],
      ['dequant', 'DeQuantStub', ['qint32'], 'float'],
    ]);
    const fc = result.nodes.find((n) => n.name === 'fc')!;
    expect(fc.activation).toBeNull();
    expect(fc.weight).toMatchObject({ dtype: 'qint8', observer: 'min_max', perChannel: true, chAxis: 0 });
    expect(result.nodes.find((n) => n.name === 'pool')!.activation).toMatchObject({
      observer: 'fixed_scale',
      fixedScale: [1 / 64],
    });
    expect(result.int16Outputs).toEqual(['conv2']);
    expect(result.int32Outputs).toEqual(['fc']);
    expect(result.warnings.map((w) => [w.code, w.node])).toEqual([['fixed-scale', 'pool']]);
    expect(result.warnings[0]!.message).toContain('±1.984375');
    expect(JSON.parse(JSON.stringify(result))).toEqual(result);
  });

  it('warns about per-tensor weights, an int32 output in the middle, qconfig null between quantized ops and a missing output fake-quant', () => {
    const perTensor = getDefaultQconfig({ weightQkwargs: { chAxis: -1 } });
    const noActivation = getDefaultQconfig({ activationFakeQuant: null, activationObserver: null });
    const qat = prepareQatFx(
      new TinyResNet(),
      {
        global: defaultQatQconfig,
        moduleName: { relu0: defaultQatOutQconfig, conv2: null, pool: noActivation, fc: perTensor },
      },
      { march: 'bayes', ...quiet },
    );
    expect(checkQconfig(qat).warnings.map((w) => [w.code, w.node])).toEqual([
      ['no-activation-fake-quant', 'pool'],
      ['weight-not-per-channel', 'fc'],
      ['int32-not-at-end', 'relu0'],
      ['qconfig-none-in-middle', 'conv2'],
    ]);
  });

  it('warns about int16 outputs when checked against a march without int16 activations', () => {
    const qat = prepareQatFx(
      new TinyResNet(),
      { global: defaultQatQconfig, moduleName: { conv2: defaultQat16bitQconfig, fc: defaultQatOutQconfig } },
      { march: 'bayes', ...quiet },
    );
    expect(checkQconfig(qat).warnings).toEqual([]);
    const onBernoulli2 = checkQconfig(qat, { march: 'bernoulli2' });
    expect(onBernoulli2.march).toBe('bernoulli2');
    expect(onBernoulli2.warnings.map((w) => [w.code, w.node])).toEqual([['int16-unsupported', 'conv2']]);
  });

  it('warns about int16 weights, which only a march that lists them takes', () => {
    const bayes = marches.get('bayes');
    const wide: MarchBackendV1 = {
      ...bayes,
      id: 'bayes-int16-weights',
      capabilities: { ...bayes.capabilities, weightDtypes: ['qint8', 'qint16'] },
    };
    const qat = prepareQatFx(
      new TinyResNet(),
      {
        global: defaultQatQconfig,
        moduleName: { conv2: getDefaultQatQconfig({ weightQkwargs: { dtype: 'qint16' } }), fc: defaultQatOutQconfig },
      },
      { march: wide, ...quiet },
    );
    const result = checkQconfig(qat, { march: 'bayes' });
    expect(result.nodes.find((n) => n.name === 'conv2')!.weight).toMatchObject({ dtype: 'qint16', quantMax: 32767 });
    expect(result.warnings).toEqual([
      {
        code: 'weight-not-qint8',
        node: 'conv2',
        message: "the weight of 'conv2' is quantized to qint16; march 'bayes' takes qint8 weights",
      },
    ]);
  });

  it('shows CPU nodes of a hybrid model as float between quantized neighbours', () => {
    const qat = prepareQatFx(
      new SeluNet(),
      { global: defaultQatQconfig },
      { march: 'bernoulli2', hybrid: true, partitioner: hybridPartitioner, ...quiet },
    );
    const result = checkQconfig(qat);
    expect(result.nodes.map((n) => [n.name, n.device, n.outputDtype])).toEqual([
      ['quant', null, 'qint8'],
      ['conv0', 'BPU', 'qint8'],
      ['selu', 'CPU', 'float'],
      ['_generated_selu_float_boundary_0', null, 'qint8'],
      ['conv1', 'BPU', 'qint8'],
      ['dequant', null, 'float'],
    ]);
  });

  it('refuses a float model with a message that says to prepare it', () => {
    expect(() => checkQconfig(symbolicTrace(new TinyResNet()))).toThrow(InvalidArgumentError);
    expect(() => checkQconfig(symbolicTrace(new TinyResNet()))).toThrow(/prepare the float model/);
  });
});
