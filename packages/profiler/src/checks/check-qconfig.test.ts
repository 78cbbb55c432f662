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
import { Generator, InvalidArgumentError, randn, type Tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { checkQconfig } from './check-qconfig.js';
import { formatQconfigInfo } from './check-qconfig-text.js';
import { DeQuantStub } from '@qtk/nn';
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
    expect(result.warnings.map((w) => [w.code, w.node])).toEqual([
      ['input-output-dtype-differs', 'conv2'],
      ['fixed-scale', 'pool'],
      ['input-output-dtype-differs', 'pool'],
    ]);
    expect(result.warnings[0]!.message).toBe(
      "'conv2' takes qint8 and gives qint16: the values are requantized between dtypes there; check that its qconfig and its inputs' are meant to differ",
    );
    expect(result.warnings[1]!.message).toContain('±1.984375');
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
    // the int16 island is flagged where the dtype changes, as horizon_plugin_pytorch warns by default
    const islandEdges = [
      ['input-output-dtype-differs', 'conv2'],
      ['input-output-dtype-differs', 'pool'],
    ];
    expect(checkQconfig(qat).warnings.map((w) => [w.code, w.node])).toEqual(islandEdges);
    const onBernoulli2 = checkQconfig(qat, { march: 'bernoulli2' });
    expect(onBernoulli2.march).toBe('bernoulli2');
    expect(onBernoulli2.warnings.map((w) => [w.code, w.node])).toEqual([
      ['int16-unsupported', 'conv2'],
      ...islandEdges,
    ]);
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

  it("checks only the nodes prefixes or types name (horizon_plugin_pytorch's filters), following dtypes through all", () => {
    const qat = prepareQatFx(
      new TinyResNet(),
      { global: defaultQatQconfig, moduleName: { conv2: defaultQat16bitQconfig } },
      { march: 'bayes', ...quiet },
    );
    const byPrefix = checkQconfig(qat, { prefixes: ['pool', 'fl'] });
    expect(byPrefix.nodes.map((n) => [n.name, n.inputDtypes, n.outputDtype])).toEqual([
      ['pool', ['qint16'], 'qint8'],
      ['flatten', ['qint8'], 'qint8'],
    ]);
    expect(byPrefix.warnings.map((w) => w.node)).toEqual(['pool']);
    const byType = checkQconfig(qat, { types: ['QAT(Linear)', DeQuantStub] });
    expect(byType.nodes.map((n) => n.name)).toEqual(['fc', 'dequant']);
    expect(checkQconfig(qat, { prefixes: ['fc'], types: [DeQuantStub] }).nodes.map((n) => n.name)).toEqual([
      'fc',
      'dequant',
    ]);
  });

  it('customCheck sees each checked module call of an example run, on a copy: the model keeps its statistics', () => {
    const qat = prepareQatFx(new TinyResNet(), { global: defaultQatQconfig }, { march: 'bayes', ...quiet });
    const x = randn([2, 3, 8, 8], { generator: new Generator(3) });
    const scalesBefore = Object.entries(qat.stateDict({ clone: true }).tensors).map(([k, t]) => [
      k,
      Array.from(t.values()),
    ]);
    const calls: string[] = [];
    const result = checkQconfig(qat, {
      types: ['QAT(Linear)', 'QAT(AdaptiveAvgPool2d)'],
      exampleInputs: [x],
      customCheck: ({ name, type, module, inputs, output }) => {
        expect(module).not.toBe(qat.getSubmodule(name));
        calls.push(`${name} ${type} ${(inputs[0] as Tensor).shape} -> ${(output as Tensor).shape}`);
      },
    });
    expect(calls).toEqual(['pool QAT(AdaptiveAvgPool2d) 2,16,8,8 -> 2,16,1,1', 'fc QAT(Linear) 2,16 -> 2,4']);
    expect(result.nodes.map((n) => n.name)).toEqual(['pool', 'fc']);
    expect(Object.entries(qat.stateDict({ clone: true }).tensors).map(([k, t]) => [k, Array.from(t.values())])).toEqual(
      scalesBefore,
    );
    expect(() => checkQconfig(qat, { customCheck: () => {} })).toThrow(
      'checkQconfig: customCheck runs the model; pass exampleInputs too',
    );
  });

  it('formats the result as the text file qconfig_info.txt', () => {
    const qat = prepareQatFx(
      new TinyResNet(),
      { global: defaultQatQconfig, moduleName: { fc: defaultQatOutQconfig } },
      { march: 'bayes', ...quiet },
    );
    const text = formatQconfigInfo(checkQconfig(qat));
    const lines = text.split('\n');
    expect(lines[0]).toBe('march: bayes');
    expect(lines[2]).toMatch(/^node +type +device +input dtypes +output dtype +activation +weight$/);
    expect(lines.find((l) => l.startsWith('fc '))).toMatch(
      /^fc +QAT\(Linear\) +BPU +qint8 +qint32 +- +qint8 min_max per channel \(axis 0\)$/,
    );
    expect(text).toContain('int32 (high-precision) outputs: fc\n');
    expect(text).toContain('0 warning(s)\n');
  });

  it('refuses a float model with a message that says to prepare it', () => {
    expect(() => checkQconfig(symbolicTrace(new TinyResNet()))).toThrow(InvalidArgumentError);
    expect(() => checkQconfig(symbolicTrace(new TinyResNet()))).toThrow(/prepare the float model/);
  });
});
