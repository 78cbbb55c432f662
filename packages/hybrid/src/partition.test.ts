// The hybrid partition: which ops go to the CPU and why (capability table, hybridDict, null
// qconfig), what prepare builds around them, and the errors of a dict that matches nothing.
import { ConversionError, convertFx, prepareQatFx, QatModule } from '@qtk/core';
import { defaultQatQconfig, FakeQuantize, getDefaultQatQconfig } from '@qtk/fake-quant';
import type { GraphModule } from '@qtk/ir';
import { BAYES_NUMERICS } from '@qtk/march-bayes';
import { createMarchConverter, createMarchSupport, DEFAULT_CONVERT_RULES } from '@qtk/fixed-point';
import '@qtk/march-bernoulli2';
import { AvgPool2d, Conv2d, DeQuantStub, Module, QuantStub, ReLU6, SELU } from '@qtk/nn';
import { InvalidArgumentError, type Tensor } from '@qtk/tensor';
import { defineCapabilities, type MarchBackendV1, marches } from '@qtk/spec';
import { describe, expect, it } from 'vitest';
import { checkDeployDevice, formatDeployDevice, HybridDictError, hybridPartitioner } from './index.js';
import {
  AlternatingNet,
  CpuEndsNet,
  call,
  FunctionalSeluNet,
  MiddleOpsNet,
  randomInputs,
  SeluBlock,
} from '@qtk/test-models';
import { calibrated } from './testing/calibrated.js';
import { prepareHybrid } from './testing/prepare-hybrid.js';

const quiet = { onWarning: () => {} };
const cpuReasons = (gm: GraphModule) =>
  Object.fromEntries(
    checkDeployDevice(gm)
      .nodes.filter((n) => n.device === 'CPU')
      .map((n) => [n.name, n.reason]),
  );

describe('automatic CPU fallback from the capability table', () => {
  it('bernoulli2: a conv fused with a ReLU6 stays on the BPU (the table lists the fused Clip under the conv)', () => {
    class ConvRelu6 extends Module {
      readonly quant = new QuantStub();
      readonly conv = new Conv2d(2, 3, 3, { padding: 1 });
      readonly act = new ReLU6();
      readonly dequant = new DeQuantStub();
      forward(x: Tensor): Tensor {
        return this.dequant.call(this.act.call(this.conv.call(this.quant.call(x))));
      }
    }
    const qat = prepareHybrid(new ConvRelu6(), 'bernoulli2');
    const report = checkDeployDevice(qat);
    expect(report.nodes.map((n) => [n.name, n.device, n.reason, n.fusedFrom])).toEqual([
      ['act', 'BPU', 'supported', ['act', 'conv']],
    ]);
    expect(report.segments).toEqual([{ device: 'BPU', nodes: ['act'] }]);
  });

  it('bernoulli2: hardswish, hardsigmoid and SELU in the middle go to the CPU (not in the table); every other op is BPU', () => {
    const qat = prepareHybrid(new MiddleOpsNet(), 'bernoulli2');
    const report = checkDeployDevice(qat);
    expect(report.nodes.map((n) => [n.name, n.device, n.reason])).toEqual([
      ['relu0', 'BPU', 'supported'], // conv0 + relu0, fused at the relu
      ['hswish', 'CPU', 'op not in table'],
      ['conv1', 'BPU', 'supported'],
      ['hsigmoid', 'CPU', 'op not in table'],
      ['conv2', 'BPU', 'supported'],
      ['selu', 'CPU', 'op not in table'],
      ['conv3', 'BPU', 'supported'],
      ['pool', 'BPU', 'supported'],
      ['flatten', 'BPU', 'supported'],
      ['fc', 'BPU', 'supported'],
    ]);
    expect(report.nodes[0]!.fusedFrom).toEqual(['relu0', 'conv0']);
    expect(report.nodes[1]!.detail).toBe("op 'HardSwish' is not in the capability table");
    expect(report.counts).toEqual({ BPU: 7, CPU: 3 });
    expect(report.transitions).toBe(6);
    expect(report.segments).toEqual([
      { device: 'BPU', nodes: ['relu0'] },
      { device: 'CPU', nodes: ['hswish'] },
      { device: 'BPU', nodes: ['conv1'] },
      { device: 'CPU', nodes: ['hsigmoid'] },
      { device: 'BPU', nodes: ['conv2'] },
      { device: 'CPU', nodes: ['selu'] },
      { device: 'BPU', nodes: ['conv3', 'pool', 'flatten', 'fc'] },
    ]);
    // CPU ops stay float modules without fake-quant; the BPU op after each reads a boundary fake-quant
    for (const name of ['hswish', 'hsigmoid', 'selu']) {
      expect(qat.getSubmodule(name)).not.toBeInstanceOf(QatModule);
      const node = qat.graph.nodes.find((n) => n.target === name)!;
      expect([...node.users].map((u) => qat.getSubmodule(u.target))).toEqual([expect.any(FakeQuantize)]);
    }
    expect(qat.getSubmodule('conv1')).toBeInstanceOf(QatModule);
  });

  it('bayes runs hardswish and hardsigmoid on the BPU; only SELU falls back', () => {
    const qat = prepareHybrid(new MiddleOpsNet(), 'bayes');
    expect(cpuReasons(qat)).toEqual({ selu: 'op not in table' });
    expect(checkDeployDevice(qat).segments.map((s) => s.device)).toEqual(['BPU', 'CPU', 'BPU']);
  });

  it('an attribute constraint sends the op to the CPU: bernoulli2 average pooling with an 8x8 kernel (max 7), not on bayes', () => {
    const qat = prepareHybrid(new MiddleOpsNet(3, 8), 'bernoulli2');
    expect(qat.getSubmodule('pool')).toBeInstanceOf(AvgPool2d);
    const pool = checkDeployDevice(qat).nodes.find((n) => n.name === 'pool')!;
    expect([pool.device, pool.reason, pool.detail]).toEqual([
      'CPU',
      'attribute constraint',
      'AveragePool: kernelSize = [8,8] violates kernelSize <= 7',
    ]);
    expect(checkDeployDevice(qat).segments.map((s) => s.nodes.join(','))).toEqual([
      'relu0',
      'hswish',
      'conv1',
      'hsigmoid',
      'conv2',
      'selu',
      'conv3',
      'pool',
      'flatten,fc',
    ]);
    const bayes = prepareHybrid(new MiddleOpsNet(3, 8), 'bayes');
    expect(checkDeployDevice(bayes).nodes.find((n) => n.name === 'pool')!.device).toBe('BPU');
  });
});

describe('hybridDict', () => {
  it('a conv forced to the CPU by name, and a fused conv by the name of the layer it absorbed', () => {
    const qat = prepareHybrid(new MiddleOpsNet(), 'bayes', { hybridDict: { moduleName: ['conv2', 'conv0'] } });
    const report = checkDeployDevice(qat);
    expect(cpuReasons(qat)).toEqual({ relu0: 'hybridDict', conv2: 'hybridDict', selu: 'op not in table' });
    expect(report.nodes.find((n) => n.name === 'conv2')!.detail).toBe("moduleName 'conv2'");
    expect(report.nodes.find((n) => n.name === 'relu0')!.detail).toBe("moduleName 'conv0'");
    expect(qat.getSubmodule('conv2')).toBeInstanceOf(Conv2d);
    // the fused first op reads the QuantStub's output (dequantized at conversion); its output enters
    // the BPU through a boundary fake-quant, so no QuantStub is generated
    expect(qat.graph.nodes.filter((n) => n.target.startsWith('_generated_quant_stub'))).toEqual([]);
    const relu0 = qat.graph.nodes.find((n) => n.target === 'relu0')!;
    expect([...relu0.users].map((u) => u.meta.floatBoundary)).toEqual([true]);
  });

  it('a conv forced to the CPU by type (class or class name); moduleName entries are reported first', () => {
    for (const type of [Conv2d, 'Conv2d']) {
      const qat = prepareHybrid(new MiddleOpsNet(), 'bayes', {
        hybridDict: { moduleType: [type], moduleName: ['conv3'] },
      });
      const report = checkDeployDevice(qat);
      expect(cpuReasons(qat)).toEqual({
        relu0: 'hybridDict',
        conv1: 'hybridDict',
        conv2: 'hybridDict',
        selu: 'op not in table',
        conv3: 'hybridDict',
      });
      expect(report.nodes.find((n) => n.name === 'conv1')!.detail).toBe("moduleType 'Conv2d'");
      expect(report.nodes.find((n) => n.name === 'conv3')!.detail).toBe("moduleName 'conv3'");
    }
  });

  it('a module type covers the functional ops its forward makes (a traced-through SeluBlock)', () => {
    const qat = prepareHybrid(new FunctionalSeluNet(), 'bayes', { hybridDict: { moduleType: [SeluBlock] } });
    const report = checkDeployDevice(qat);
    expect(report.nodes.map((n) => [n.name, n.kind, n.device, n.reason, n.detail])).toEqual([
      ['conv0', 'module', 'BPU', 'supported', null],
      ['selu', 'function', 'CPU', 'op not in table', "op 'Selu' is not in the capability table"],
      ['conv1', 'module', 'BPU', 'supported', null],
      ['selu_1', 'function', 'CPU', 'hybridDict', "moduleType 'SeluBlock'"],
      ['conv2', 'module', 'BPU', 'supported', null],
    ]);
    expect(report.transitions).toBe(4);
  });

  it('a functional add is addressed by its generated module name', () => {
    const qat = prepareHybrid(new CpuEndsNet(), 'bayes', { hybridDict: { moduleName: ['_generated_add_0'] } });
    expect(cpuReasons(qat)).toMatchObject({ _generated_add_0: 'hybridDict' });
  });

  it('a name or type that matches nothing is a HybridDictError listing the closest names', () => {
    const prep = (hybridDict: object) => () => prepareHybrid(new MiddleOpsNet(), 'bayes', { hybridDict });
    const byName = (() => {
      try {
        prep({ moduleName: ['conv_1'] })();
      } catch (e) {
        return e;
      }
    })() as HybridDictError;
    expect(HybridDictError.isInstance(byName)).toBe(true);
    expect(byName.key).toBe('moduleName');
    expect(byName.closest[0]).toBe('conv1');
    expect(byName.message).toMatch(/hybridDict\.moduleName entry 'conv_1' matches nothing.*closest: conv1/);
    expect(prep({ moduleType: ['Hardswsh'] })).toThrow(/hybridDict\.moduleType entry 'Hardswsh'.*closest: Hardswish/);
    expect(prep({ moduleType: [QuantStub, DeQuantStub, SELU, 'NoSuchLayer'] })).toThrow(HybridDictError);
  });

  it('hybridDict without hybrid is refused', () => {
    expect(() =>
      prepareQatFx(
        new MiddleOpsNet(),
        { global: defaultQatQconfig },
        { march: 'bayes', hybridDict: { moduleName: ['conv1'] } },
      ),
    ).toThrow(InvalidArgumentError);
  });
});

describe('dtype and qconfig', () => {
  it('int16 asked on bernoulli2 stays a QConfigError naming the module', () => {
    const int16 = getDefaultQatQconfig({ dtype: 'qint16' });
    expect(() =>
      prepareHybrid(new MiddleOpsNet(), 'bernoulli2', {
        qconfigDict: { global: defaultQatQconfig, moduleName: { conv2: int16 } },
      }),
    ).toThrow(/qconfig of module 'conv2'.*no qint16 activations/);
  });

  it("a dtype the march has but the op's table entry does not take sends the op to the CPU (reason dtype)", () => {
    const bayes = marches.get('bayes');
    // bayes with a conv that takes qint8 only; its converter reads the same table
    const table = defineCapabilities({
      ...bayes.capabilities,
      ops: bayes.capabilities.ops.map((o) => (o.op === 'Conv' ? { ...o, dtypes: ['qint8'] } : o)),
    });
    const env = { march: 'bayes-conv-int8', table, numerics: BAYES_NUMERICS };
    const march: MarchBackendV1 = {
      ...bayes,
      id: env.march,
      capabilities: table,
      hooks: {
        convertNode: createMarchConverter(env, DEFAULT_CONVERT_RULES),
        supportsNode: createMarchSupport(env, DEFAULT_CONVERT_RULES),
      },
    };
    const int16 = getDefaultQatQconfig({ dtype: 'qint16' });
    const qat = prepareHybrid(new MiddleOpsNet(), march, {
      qconfigDict: { global: defaultQatQconfig, moduleName: { conv2: int16, fc: int16 } },
    });
    const nodes = checkDeployDevice(qat).nodes;
    expect(nodes.find((n) => n.name === 'conv2')).toMatchObject({
      device: 'CPU',
      reason: 'dtype',
      detail: 'Conv: dtype qint16 not supported (supported: qint8)',
    });
    expect(nodes.find((n) => n.name === 'fc')).toMatchObject({ device: 'BPU' }); // Gemm keeps bayes's dtypes
    expect(cpuReasons(qat)).toEqual({ conv2: 'dtype', selu: 'op not in table' });
  });

  it('a null qconfig is a CPU op with reason "qconfig null", with or without hybrid', () => {
    for (const hybrid of [true, false]) {
      const qat = prepareQatFx(
        new MiddleOpsNet(),
        { global: defaultQatQconfig, moduleName: { conv1: null } },
        { march: 'bayes', ...(hybrid ? { hybrid, partitioner: hybridPartitioner } : {}), ...quiet },
      );
      expect(cpuReasons(qat)).toEqual(
        hybrid ? { conv1: 'qconfig null', selu: 'op not in table' } : { conv1: 'qconfig null' },
      );
    }
  });
});

describe('the ends of the model', () => {
  it('a CPU first op needs no QuantStub and a CPU last op no DeQuantStub; the output is float', () => {
    const qat = calibrated(prepareHybrid(new CpuEndsNet(), 'bernoulli2'));
    const report = checkDeployDevice(qat);
    expect(report.nodes.map((n) => [n.name, n.device])).toEqual([
      ['selu', 'CPU'],
      ['relu', 'BPU'],
      ['_generated_add_0', 'BPU'],
      ['hswish', 'CPU'],
    ]);
    expect(report.segments.map((s) => s.nodes)).toEqual([['selu'], ['relu', '_generated_add_0'], ['hswish']]);
    expect(report.transitions).toBe(2);
    const stub = qat.graph.nodes.find((n) => n.target === '_generated_quant_stub_0')!;
    expect(stub.inputNodes.map((n) => n.name)).toEqual(['selu']);
    const fixed = convertFx(qat, quiet);
    const x = randomInputs(20);
    const want = call(qat, x);
    const got = call(fixed, x);
    expect(got.dtype).toBe('float32');
    expect(got.shape).toEqual(want.shape);
    // the hardswish runs in float on the dequantized add, fake-quant on the fake-quantized add: the
    // inputs differ by at most one step of the add's scale, and hardswish's slope is at most 1.5
    const step = (qat.getSubmodule('_generated_add_0') as QatModule).activationPostProcess!.calculateQparams()
      .scale[0]!;
    const diff = got.sub(want).abs().max().item();
    expect(diff).toBeLessThanOrEqual(1.5 * step + 1e-6);
  });
});

describe('many alternating segments', () => {
  it('conv / hardswish / conv / ... on bernoulli2: seven segments, six transitions, one dequantize and one quantize per CPU op', () => {
    const qat = calibrated(prepareHybrid(new AlternatingNet(), 'bernoulli2'));
    const report = checkDeployDevice(qat);
    expect(report.segments.map((s) => `${s.device}:${s.nodes.join(',')}`)).toEqual([
      'BPU:conv0',
      'CPU:act0',
      'BPU:conv1',
      'CPU:act1',
      'BPU:conv2',
      'CPU:act2',
      'BPU:conv3',
    ]);
    expect(report.transitions).toBe(6);
    const fixed = convertFx(qat, quiet);
    const kinds = fixed.graph.nodes
      .filter((n) => n.op === 'call_module')
      .map((n) => fixed.getSubmodule(n.target).constructor.name);
    // three BPU convs each followed by a CPU hardswish, then the last BPU conv
    const bpuConv = ['Quantize', 'FixedConv', 'Dequantize'];
    expect(kinds).toEqual([...bpuConv, 'Hardswish', ...bpuConv, 'Hardswish', ...bpuConv, 'Hardswish', ...bpuConv]);
    expect(
      checkDeployDevice(fixed, { expected: { conv0: 'BPU', act0: 'CPU', conv3: 'CPU', nope: 'BPU' } }).mismatches,
    ).toEqual([
      { name: 'conv3', expected: 'CPU', actual: 'BPU' },
      { name: 'nope', expected: 'BPU', actual: null },
    ]);
    const table = formatDeployDevice(checkDeployDevice(fixed));
    expect(table.split('\n')[2]).toMatch(/^conv0 +BPU +FixedConv$/);
    expect(table).toMatch(/act0 +CPU +Hardswish +op not in table: op 'HardSwish' is not in the capability table/);
    expect(table).toMatch(/7 ops: 4 BPU, 3 CPU; 6 CPU<->BPU transition\(s\); 7 segment\(s\)$/);
  });
});

describe('without hybrid', () => {
  it('bernoulli2 rejects hardswish, hardsigmoid and SELU at once and says how to turn hybrid on', () => {
    const qat = calibrated(
      prepareQatFx(new MiddleOpsNet(), { global: defaultQatQconfig }, { march: 'bernoulli2', ...quiet }),
    );
    let err: unknown;
    try {
      convertFx(qat, quiet);
    } catch (e) {
      err = e;
    }
    expect(ConversionError.isInstance(err)).toBe(true);
    const e = err as ConversionError;
    expect(e.failures.map((f) => f.node)).toEqual(['hswish', 'hsigmoid', 'selu']);
    expect(e.message).toMatch(/hybrid: true/);
    expect(e.message).toMatch(/--hybrid/);
  });
});
