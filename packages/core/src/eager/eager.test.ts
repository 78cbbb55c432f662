// The eager-mode API (fuseModules, prepareQat, convert) against the FX path on the same model: the same
// swaps, so the same scales and bit-identical fixed-point outputs; and a model FX cannot trace.
import { defaultCalibQconfig, namedFakeQuants } from '@qtk/fake-quant';
import { QTensor } from '@qtk/fixed-point';
import { symbolicTrace } from '@qtk/ir';
import '@qtk/march-bayes';
import {
  AdaptiveAvgPool2d,
  BatchNorm2d,
  Conv2d,
  DeQuantStub,
  Flatten,
  FloatFunctional,
  Identity,
  Linear,
  Module,
  QuantStub,
  ReLU,
} from '@qtk/nn';
import { Generator, randn, type Tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { calibrate, convert, convertFx, fuseModules, prepareQat, prepareQatFx, QatModule } from '../index.js';
import { LateConvertedModule } from '../wrapped-conversion.js';
import { CpuConvertedModule, LateConvertedFunctional } from './convert.js';
import { CpuModule } from './cpu-module.js';
import { FusedAddSite } from './fuse-modules.js';
import { QatFloatFunctional } from './qat-float-functional.js';

/** Random running statistics, so BatchNorm absorption changes the weights. */
function bn(channels: number, g: Generator): BatchNorm2d {
  const b = new BatchNorm2d(channels);
  b.runningMean!.data.set(randn([channels], { generator: g }).values());
  b.runningVar!.data.set(
    randn([channels], { generator: g })
      .values()
      .map((v) => 0.5 + Math.abs(v)),
  );
  return b;
}

/** A residual net written for eager mode: modules and FloatFunctionals only, stubs at both ends. */
class EagerNet extends Module {
  readonly quant = new QuantStub();
  readonly conv1: Conv2d;
  readonly bn1: BatchNorm2d;
  readonly relu1 = new ReLU();
  readonly conv2: Conv2d;
  readonly bn2: BatchNorm2d;
  readonly add = new FloatFunctional();
  readonly relu2 = new ReLU();
  readonly pool = new AdaptiveAvgPool2d([1, 1]);
  readonly flatten = new Flatten();
  readonly fc: Linear;
  readonly mul = new FloatFunctional();
  readonly dequant = new DeQuantStub();
  constructor(seed: number) {
    super();
    const g = new Generator(seed);
    this.conv1 = new Conv2d(2, 6, 3, { padding: 1, generator: g });
    this.bn1 = bn(6, g);
    this.conv2 = new Conv2d(6, 6, 3, { padding: 1, generator: g });
    this.bn2 = bn(6, g);
    this.fc = new Linear(6, 4, { generator: g });
  }
  forward(x: Tensor): Tensor {
    const h = this.relu1.call(this.bn1.call(this.conv1.call(this.quant.call(x))));
    const r = this.relu2.call(this.add.add(this.bn2.call(this.conv2.call(h)), h));
    const y = this.fc.call(this.flatten.call(this.pool.call(r)));
    return this.dequant.call(this.mul.mul(y, y));
  }
}

const batches = (seed: number, n: number) =>
  Array.from({ length: n }, (_, i) => randn([4, 2, 6, 6], { generator: new Generator(seed + i) }));
const quiet = { onWarning: () => {} };

/** An int8 model of a small net stays within 5 % of the float output's peak on every batch. */
function expectNearFloat(float: Module, fixed: Module, xs: readonly Tensor[]): void {
  for (const x of xs) {
    const want = (float.call(x) as Tensor).values();
    const got = (fixed.call(x) as Tensor).values();
    let err = 0;
    let peak = 0;
    for (let i = 0; i < want.length; i++) {
      err = Math.max(err, Math.abs(want[i]! - got[i]!));
      peak = Math.max(peak, Math.abs(want[i]!));
    }
    expect(err).toBeLessThan(0.05 * peak);
  }
}
const GROUPS = [
  ['conv1', 'bn1', 'relu1'],
  ['conv2', 'bn2', 'add', 'relu2'],
];

describe('eager mode: fuseModules, prepareQat, convert', () => {
  it('fuses the named groups: the fused module at the layer (or add) path, Identity for the rest, same outputs', () => {
    const model = new EagerNet(1).eval();
    const x = batches(50, 1)[0]!;
    const fused = fuseModules(model, GROUPS, { exampleInputs: x });
    expect(fused).not.toBe(model);
    expect(model.getSubmodule('conv1')).toBeInstanceOf(Conv2d); // the float model is untouched
    expect(fused.getSubmodule('conv1').constructor.name).toBe('ConvAddReLU2d');
    for (const p of ['bn1', 'relu1', 'conv2', 'bn2', 'relu2']) expect(fused.getSubmodule(p)).toBeInstanceOf(Identity);
    expect(fused.getSubmodule('add')).toBeInstanceOf(FusedAddSite);
    const a = model.call(x).values();
    const b = fused.call(x).values();
    for (let i = 0; i < a.length; i++) expect(Math.abs(a[i]! - b[i]!)).toBeLessThan(1e-4);
  });

  it('refuses groups it cannot fuse, and a fusion that changes the outputs', () => {
    const model = new EagerNet(1).eval();
    expect(() => fuseModules(model, [['bn1', 'conv1']])).toThrow(
      /group 0 \['bn1', 'conv1'\]: 'bn1' is a BatchNorm2d; a group starts with a Conv2d/,
    );
    expect(() => fuseModules(model, [['conv1', 'relu1', 'bn1']])).toThrow(/'bn1' \(BatchNorm2d\) is out of place/);
    expect(() => fuseModules(model, [['conv1', 'nope']])).toThrow(/group 0 .*has no child 'nope'/);
    expect(() =>
      fuseModules(model, [
        ['conv1', 'bn1'],
        ['conv1', 'relu1'],
      ]),
    ).toThrow(/'conv1' is listed in groups 0 and 1/);
    // bn2 follows conv2, not conv1: forward runs conv1's output through bn1, so the check catches it
    expect(() => fuseModules(model, [['conv1', 'bn2']], { exampleInputs: batches(50, 1)[0]! })).toThrow(
      /output 0 of the fused model differs from the float model's/,
    );
  });

  it('gives the same fake-quants, scales and bit-identical fixed-point outputs as the FX path', () => {
    const float = new EagerNet(2).eval();
    const options = { march: 'bayes', ...quiet };
    const fx = prepareQatFx(float, { global: defaultCalibQconfig }, options);
    const eager = prepareQat(fuseModules(float, GROUPS), defaultCalibQconfig, { march: 'bayes' });
    expect(eager.getSubmodule('conv1')).toBeInstanceOf(QatModule);
    expect(eager.getSubmodule('add.fused')).toBeInstanceOf(QatModule);
    expect(eager.getSubmodule('mul')).toBeInstanceOf(QatFloatFunctional);
    for (const m of [fx, eager]) calibrate(m, batches(100, 4), quiet);
    const scales = (m: Module) =>
      namedFakeQuants(m)
        .map(([, fq]) => Array.from(fq.calculateQparams().scale))
        .sort((a, b) => a[0]! - b[0]!);
    expect(scales(eager)).toEqual(scales(fx));

    const fixedFx = convertFx(fx, quiet);
    const fixedEager = convert(eager, quiet);
    expect(fixedEager.getSubmodule('conv1')).toBeInstanceOf(LateConvertedModule);
    expect(fixedEager.getSubmodule('mul')).toBeInstanceOf(LateConvertedFunctional);
    for (const x of batches(200, 3)) {
      const want = fixedFx.call(x) as Tensor;
      const got = fixedEager.call(x) as Tensor;
      expect(got).not.toBeInstanceOf(QTensor);
      expect(Array.from(got.values())).toEqual(Array.from(want.values()));
    }
    // the QAT model is left as it was
    expect(eager.getSubmodule('conv1')).toBeInstanceOf(QatModule);
  });

  it('quantizes a model FX cannot trace (control flow on values)', () => {
    class Branchy extends EagerNet {
      override forward(x: Tensor): Tensor {
        const h = this.relu1.call(this.bn1.call(this.conv1.call(this.quant.call(x))));
        // a data-dependent branch: symbolic tracing cannot follow it
        const deep = (x.values()[0] ?? 0) > 0;
        const r = deep ? this.relu2.call(this.add.add(this.bn2.call(this.conv2.call(h)), h)) : h;
        return this.dequant.call(this.fc.call(this.flatten.call(this.pool.call(r))));
      }
    }
    const float = new Branchy(3).eval();
    expect(() => symbolicTrace(float)).toThrow();
    const qat = prepareQat(fuseModules(float, GROUPS), { global: defaultCalibQconfig }, { march: 'bayes' });
    calibrate(qat, batches(300, 4), quiet);
    const fixed = convert(qat, quiet);
    expectNearFloat(float, fixed, batches(400, 4));
  });

  it('takes qconfigs from the modules themselves, refuses a prepared model, a shared FloatFunctional and an uncalibrated model', () => {
    const fused = fuseModules(new EagerNet(4).eval(), GROUPS);
    (fused as unknown as { qconfig: unknown }).qconfig = defaultCalibQconfig;
    (fused.getSubmodule('fc') as unknown as { qconfig: unknown }).qconfig = null;
    const qat = prepareQat(fused, { march: 'bayes' });
    expect(qat.getSubmodule('conv1')).toBeInstanceOf(QatModule);
    expect(qat.getSubmodule('fc')).toBeInstanceOf(Linear);
    expect(() => prepareQat(qat, defaultCalibQconfig, { march: 'bayes' })).toThrow(/already prepared/);
    expect(() => convert(qat, quiet)).toThrow(/never saw data/);

    class Shared extends EagerNet {
      override forward(x: Tensor): Tensor {
        const h = this.relu1.call(this.bn1.call(this.conv1.call(this.quant.call(x))));
        return this.dequant.call(this.mul.mul(this.mul.mul(h, h), h));
      }
    }
    const shared = prepareQat(new Shared(5).eval(), defaultCalibQconfig, { march: 'bayes' });
    expect(() => calibrate(shared, batches(500, 1), quiet)).toThrow(
      /'mul' \(FloatFunctional\) is called 2 times in one forward; .*give every call site its own FloatFunctional/,
    );
  });

  it("hybrid: a module whose qconfig is null runs on the CPU between quantized ones (the guide's HyperQuantModel)", () => {
    class HyperQuantModel extends Module {
      readonly quant = new QuantStub();
      readonly conv0: Conv2d;
      readonly conv1: Conv2d;
      readonly conv2: Conv2d;
      readonly dequant = new DeQuantStub();
      constructor(channels: number) {
        super();
        const g = new Generator(6);
        this.conv0 = new Conv2d(channels, channels, 1, { generator: g });
        this.conv1 = new Conv2d(channels, channels, 1, { generator: g });
        this.conv2 = new Conv2d(channels, channels, 1, { generator: g });
      }
      forward(x: Tensor): Tensor {
        return this.dequant.call(this.conv2.call(this.conv1.call(this.conv0.call(this.quant.call(x)))));
      }
    }
    const float = new HyperQuantModel(2).eval();
    // the guide's set_qconfig: the model's qconfig, none on conv1
    (float as unknown as { qconfig: unknown }).qconfig = defaultCalibQconfig;
    (float.conv1 as unknown as { qconfig: unknown }).qconfig = null;
    const qat = prepareQat(float, { march: 'bayes', hybrid: true });
    expect(qat.getSubmodule('conv0')).toBeInstanceOf(QatModule);
    expect(qat.getSubmodule('conv1')).toBeInstanceOf(CpuModule);
    expect(qat.getSubmodule('conv2')).toBeInstanceOf(QatModule);
    calibrate(qat, batches(600, 4), quiet);
    const fixed = convert(qat, quiet);
    const cpu = fixed.getSubmodule('conv1') as CpuConvertedModule;
    expect(cpu).toBeInstanceOf(CpuConvertedModule);
    expect(cpu.module).toBeInstanceOf(Conv2d); // a float conv
    expect(cpu.outputQparams?.scale).toEqual(
      (qat.getSubmodule('conv1') as CpuModule).activationPostProcess!.calculateQparams().scale,
    );
    expectNearFloat(float, fixed, batches(700, 2));
    // without hybrid, conv1 stays a float Conv2d, which the march cannot run on quantized values
    const plain = prepareQat(float, { march: 'bayes' });
    expect(plain.getSubmodule('conv1')).toBeInstanceOf(Conv2d);
    calibrate(plain, batches(600, 4), quiet);
    expect(() => convert(plain, quiet).call(batches(700, 1)[0]!)).toThrow(/cannot convert .*conv1/s);
  });
});
