import {
  defaultLsqQconfig,
  defaultQatQconfig,
  defaultQat16bitQconfig,
  defaultQatOutQconfig,
  type FakeQuantize,
  getDefaultQconfig,
  namedFakeQuants,
  setFakeQuantize,
} from '@qtk/fake-quant';
import {
  AdaptiveAvgPool2d,
  BatchNorm2d,
  Conv2d,
  ConvTranspose2d,
  DeQuantStub,
  FloatFunctional,
  Flatten,
  Linear,
  Module,
  QuantStub,
  ReLU,
  Adam,
  CrossEntropyLoss,
} from '@qtk/nn';
import { defineCapabilities, marches, type MarchBackendV1 } from '@qtk/spec';
import { add, cat, Generator, noGrad, randn, tensor, type Tensor } from '@qtk/tensor';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import '@qtk/march-bayes';
import { symbolicTrace } from '@qtk/ir';
import { calibrate, prepareQatFx, QatModule, resetMarch, setMarch, startQat } from './index.js';

const g = new Generator(11);

class Block extends Module {
  readonly conv = new Conv2d(4, 4, 3, { padding: 1, generator: g });
  readonly bn = new BatchNorm2d(4);
  readonly skip = new FloatFunctional();
  readonly relu = new ReLU();
  forward(x: Tensor): Tensor {
    return this.relu.call(this.skip.add(this.bn.call(this.conv.call(x)), x));
  }
}

export class Net extends Module {
  readonly quant = new QuantStub();
  readonly conv1 = new Conv2d(1, 4, 3, { padding: 1, generator: g });
  readonly bn1 = new BatchNorm2d(4);
  readonly relu1 = new ReLU();
  readonly block = new Block();
  readonly conv2 = new Conv2d(4, 4, 1, { generator: g });
  readonly pool = new AdaptiveAvgPool2d(1);
  readonly flatten = new Flatten();
  readonly fc = new Linear(8, 3, { generator: g });
  readonly dequant = new DeQuantStub();
  forward(x: Tensor): Tensor {
    const a = this.relu1.call(this.bn1.call(this.conv1.call(this.quant.call(x))));
    const b = this.block.call(a);
    const c = add(this.conv2.call(b), b); // a functional add the fusion leaves (both inputs used elsewhere)
    const d = cat([c, b], 1);
    return this.dequant.call(this.fc.call(this.flatten.call(this.pool.call(d))));
  }
}

function batches(n: number, seed: number): Tensor[] {
  const gen = new Generator(seed);
  return Array.from({ length: n }, () => randn([8, 1, 6, 6], { generator: gen }));
}

beforeEach(() => setMarch('bayes'));
afterEach(() => resetMarch());

describe('prepareQatFx', () => {
  it('fuses, swaps QAT modules and inserts activation fake-quants; the input model is unchanged', () => {
    const model = new Net().eval();
    const qat = prepareQatFx(model, { global: defaultQatQconfig });
    const swapped = qat
      .namedModules()
      .filter(([, m]) => m instanceof QatModule)
      .map(([n, m]) => [n, (m as QatModule).module.constructor.name]);
    expect(swapped).toEqual(
      expect.arrayContaining([
        ['quant', 'QuantStub'],
        ['relu1', 'ConvAddReLU2d'],
        ['block.skip', 'ConvAddReLU2d'], // conv + bn + FloatFunctional add + relu sits at the add's name
        ['_generated_add_0', 'ConvAddReLU2d'], // conv2 + the functional add
        ['pool', 'AdaptiveAvgPool2d'],
        ['fc', 'Linear'],
      ]),
    );
    const inserted = qat.graph.nodes
      .filter((n) => n.op === 'call_module' && n.target.includes('activation_post_process'))
      .map((n) => n.args[0] as { name: string });
    expect(inserted.map((n) => n.name)).toEqual(['_generated_cat_0']); // the functional cat, now a generated FloatFunctional
    expect((qat.getSubmodule('fc') as QatModule).weightFakeQuant!.scale.shape).toEqual([3]);
    expect(model.conv2).toBeInstanceOf(Conv2d);
    expect(namedFakeQuants(model)).toEqual([]);
  });

  it('calibrated (VALIDATION) output is close to the float model; CALIBRATION output equals it', () => {
    const model = new Net().eval();
    const x = batches(1, 99)[0]!;
    const ref = noGrad(() => model.call(x)).toArray();
    const qat = prepareQatFx(model, { global: defaultQatQconfig });
    qat.eval();
    setFakeQuantize(qat, 'CALIBRATION');
    expect(
      Math.max(...(noGrad(() => qat.call(x)) as Tensor).toArray().map((v, i) => Math.abs(v - ref[i]!))),
    ).toBeLessThan(1e-5);
    expect(calibrate(qat, batches(6, 1))).toBe(6);
    for (const [, fq] of namedFakeQuants(qat)) expect(fq.fakeQuantState).toBe('VALIDATION');
    const out = (noGrad(() => qat.call(x)) as Tensor).toArray();
    const maxRef = Math.max(...ref.map(Math.abs));
    const maxErr = Math.max(...out.map((v, i) => Math.abs(v - ref[i]!)));
    expect(maxErr).toBeGreaterThan(0); // it is quantized
    expect(maxErr / maxRef).toBeLessThan(0.05);
  });

  it('QAT trains (loss falls) from the calibration state', () => {
    const model = new Net().eval();
    const calib = prepareQatFx(model, { global: defaultQatQconfig });
    calibrate(calib, batches(4, 2));
    const qat = prepareQatFx(new Net(), { global: defaultQatQconfig });
    startQat(qat, calib.stateDict());
    expect(namedFakeQuants(qat).every(([, f]) => f.fakeQuantState === 'QAT')).toBe(true);
    // a learnable task: the class is the sign band of the image mean
    const x = randn([32, 1, 6, 6], { generator: new Generator(3) });
    const v = x.toArray();
    const mean = (i: number) => v.slice(i * 36, i * 36 + 36).reduce((a, b) => a + b, 0) / 36;
    const y = tensor(
      Int32Array.from({ length: 32 }, (_, i) => (mean(i) < -0.08 ? 0 : mean(i) > 0.08 ? 2 : 1)),
      [32],
    );
    const opt = new Adam(qat.parameters(), { lr: 0.02 });
    const lossFn = new CrossEntropyLoss();
    const losses: number[] = [];
    for (let step = 0; step < 40; step++) {
      const loss = lossFn.call(qat.call(x), y);
      opt.zeroGrad();
      loss.backward();
      opt.step();
      losses.push(loss.item());
    }
    expect(losses.at(-1)!).toBeLessThan(losses[0]! * 0.7);
  });

  it('a prepared model retraces (QatModule and FakeQuantize are trace leaves) and runs the same', () => {
    const qat = prepareQatFx(new Net().eval(), { global: defaultQatQconfig });
    calibrate(qat, batches(2, 4));
    const again = symbolicTrace(qat);
    const x = batches(1, 5)[0]!;
    expect((noGrad(() => again.call(x)) as Tensor).toArray()).toEqual((noGrad(() => qat.call(x)) as Tensor).toArray());
  });
});

describe('QAT module details', () => {
  it('a QuantStub with a scale gets a fixed-scale fake-quant; LSQ qconfigs give learnable scales', () => {
    class Stubbed extends Module {
      readonly quant = new QuantStub({ scale: 1 / 128 });
      readonly conv = new Conv2d(1, 2, 3, { generator: g });
      forward(x: Tensor): Tensor {
        return this.conv.call(this.quant.call(x));
      }
    }
    const qat = prepareQatFx(new Stubbed(), { global: defaultLsqQconfig });
    const stub = (qat.getSubmodule('quant') as QatModule).activationPostProcess!;
    expect(stub.observer.name).toBe('fixed_scale');
    expect(stub.calculateQparams().scale[0]).toBe(Math.fround(1 / 128));
    expect(stub.forward(tensor([0.5, 2])).toArray()).toEqual([0.5, 127 / 128]);
    const conv = qat.getSubmodule('conv') as QatModule;
    expect(conv.weightFakeQuant!.kind).toBe('lsq');
    expect(qat.parameters()).toContain(conv.weightFakeQuant!.scale);
  });

  it('transposed convs quantize weights per channel on axis 1', () => {
    class Up extends Module {
      readonly quant = new QuantStub();
      readonly up = new ConvTranspose2d(2, 5, 2, { stride: 2, generator: g });
      forward(x: Tensor): Tensor {
        return this.up.call(this.quant.call(x));
      }
    }
    const qat = prepareQatFx(new Up(), { global: defaultQatQconfig });
    const w = (qat.getSubmodule('up') as QatModule).weightFakeQuant!;
    expect(w.options.chAxis).toBe(1);
    expect(w.scale.shape).toEqual([5]);
    expect((qat.call(randn([1, 2, 3, 3])) as Tensor).shape).toEqual([1, 5, 6, 6]);
  });
});

describe('qconfig resolution', () => {
  const act = (m: Module) => (m as QatModule).activationPostProcess;
  it('global < moduleType < moduleName < module.qconfig, children inherit, ops inherit their module', () => {
    const q16 = defaultQat16bitQconfig;
    const kl = getDefaultQconfig('fake_quant', 'fake_quant', 'kl');
    const model = new Net().eval();
    (model.fc as unknown as { qconfig: unknown }).qconfig = defaultQatOutQconfig;
    const qat = prepareQatFx(model, {
      global: defaultQatQconfig,
      moduleType: [
        [Conv2d, q16],
        [Linear, q16],
      ],
      moduleName: { conv2: kl, block: kl },
    });
    expect(act(qat.getSubmodule('relu1'))!.dtype).toBe('qint16'); // fused conv: its conv's type matches
    expect(act(qat.getSubmodule('_generated_add_0'))!.observer.name).toBe('kl'); // conv2 fused with the add: name beats type
    expect(act(qat.getSubmodule('fc'))).toBeNull(); // module.qconfig beats type
    expect(act(qat.getSubmodule('quant'))!.dtype).toBe('qint8'); // global
    expect(act(qat.getSubmodule('block.skip'))!.observer.name).toBe('kl'); // inherited from block
    const fqOf = (node: string) => {
      const n = qat.graph.nodes.find(
        (m) =>
          m.op === 'call_module' &&
          (m.args[0] as { name?: string })?.name === node &&
          m.target.includes('activation_post_process'),
      )!;
      return qat.getSubmodule(n.target) as FakeQuantize;
    };
    expect(fqOf('_generated_cat_0').observer.name).toBe('min_max'); // root-level op: global
  });

  it("moduleName as [name, qconfig] pairs, horizon_plugin_pytorch's list form: in order, a later pair winning", () => {
    const kl = getDefaultQconfig('fake_quant', 'fake_quant', 'kl');
    const model = new Net().eval();
    const qat = prepareQatFx(model, {
      global: defaultQatQconfig,
      moduleName: [
        ['conv2', defaultQat16bitQconfig],
        ['fc', defaultQatOutQconfig],
        ['conv2', kl],
      ],
    });
    expect(act(qat.getSubmodule('_generated_add_0'))!.observer.name).toBe('kl'); // the later conv2 pair
    expect(act(qat.getSubmodule('fc'))).toBeNull(); // the "out" qconfig: a high-precision output
    expect(act(qat.getSubmodule('relu1'))!.observer.name).toBe('min_max'); // global
    const bad = [['conv2', 'kl']] as unknown as [string, null][];
    expect(() => prepareQatFx(new Net().eval(), { global: defaultQatQconfig, moduleName: bad })).toThrow(
      "qconfigDict.moduleName[0] must be a [name, QConfig | null] pair, as in moduleName: [['conv1', qconfig]]",
    );
    expect(() => prepareQatFx(new Net().eval(), { global: defaultQatQconfig, moduleName: [['conv_2', null]] })).toThrow(
      /conv_2/,
    );
  });

  it('null leaves a module float', () => {
    const qat = prepareQatFx(new Net().eval(), { global: defaultQatQconfig, moduleName: { fc: null } });
    expect(qat.getSubmodule('fc')).toBeInstanceOf(Linear);
  });
});

describe('errors and warnings', () => {
  it('a model without a QuantStub: the error names the input and where the stub is needed', () => {
    class NoStub extends Module {
      readonly conv = new Conv2d(1, 2, 3, { generator: g });
      forward(x: Tensor): Tensor {
        return this.conv.call(x);
      }
    }
    expect(() => prepareQatFx(new NoStub(), { global: defaultQatQconfig })).toThrow(
      /graph input 'x' reaches 'conv' \(Conv2d\) without passing a QuantStub/,
    );
    // graphs without stubs (ONNX imports) can ask for them
    const qat = prepareQatFx(
      symbolicTrace(new NoStub()),
      { global: defaultQatQconfig },
      { inputQuantStubs: { scale: 1 / 128 } },
    );
    expect(qat.graph.nodes.map((n) => n.target).slice(0, 3)).toEqual(['x', '_generated_quant_stub_0', 'conv']);
    expect((qat.getSubmodule('_generated_quant_stub_0') as QatModule).activationPostProcess!.observer.name).toBe(
      'fixed_scale',
    );
  });

  it('a qconfig the march cannot honour is rejected, naming the module', () => {
    const int8Only: MarchBackendV1 = {
      apiVersion: 1,
      id: 'test-int8-only',
      capabilities: defineCapabilities({
        version: 1,
        activationDtypes: ['qint8'],
        weightDtypes: ['qint8'],
        weightPerChannel: true,
        ops: [],
      }),
      hooks: {},
    };
    marches.register(int8Only);
    setMarch('test-int8-only');
    expect(() =>
      prepareQatFx(new Net().eval(), { global: defaultQatQconfig, moduleName: { conv2: defaultQat16bitQconfig } }),
    ).toThrow(/qconfig of module 'conv2'.*qint16 activations.*test-int8-only/);
    expect(() => prepareQatFx(new Net().eval(), { global: defaultQatQconfig })).not.toThrow();
    expect(() => setMarch('nope')).toThrow(/test-int8-only/);
  });
});

describe('prepareQatFx leaves its input untouched', () => {
  it('two models prepared from one fused GraphModule (fuse: false) own their QAT modules', async () => {
    const { fuseFx } = await import('@qtk/fusion');
    const fused = fuseFx(symbolicTrace(new Net()));
    const before = fused.namedModules().map(([n, m]) => [n, m] as const);
    const a = prepareQatFx(fused, { global: defaultQatQconfig }, { fuse: false });
    const b = prepareQatFx(fused, { global: defaultQatQconfig }, { fuse: false });
    expect(fused.namedModules().map(([n, m]) => [n, m] as const)).toEqual(before);
    expect(fused.modules().some((m) => m instanceof QatModule)).toBe(false);
    const qatOf = (gm: Module) => gm.modules().filter((m) => m instanceof QatModule);
    expect(qatOf(a).length).toBeGreaterThan(0);
    expect(qatOf(a).length).toBe(qatOf(b).length);
    for (const m of qatOf(a)) expect(qatOf(b)).not.toContain(m);
  });
});
