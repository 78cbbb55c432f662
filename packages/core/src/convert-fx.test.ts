import { defaultQat16bitQconfig, defaultQatOutQconfig, defaultQatQconfig } from '@qtk/fake-quant';
import { FixedConv, QTensor } from '@qtk/fixed-point';
import type { GraphModule } from '@qtk/ir';
import '@qtk/march-bayes';
import '@qtk/march-bernoulli2';
import { Conv3d, DeQuantStub, Module, QuantStub, Softmax } from '@qtk/nn';
import { QConfigError, UnsupportedOpError } from '@qtk/spec';
import { ConvBnReluNet } from '@qtk/test-models';
import { Generator, noGrad, rand, type Tensor } from '@qtk/tensor';
import { afterEach, describe, expect, it } from 'vitest';
import {
  calibrate,
  ConversionError,
  convertFx,
  prepareQatFx,
  QatModule,
  resetMarch,
  setMarch,
  setPreserveQatMode,
} from './index.js';
import { calibratedQat, Conv3dSoftmaxNet, setBatchNormStats, thrownBy } from './testing/convert-harness.js';

/** A compact version of the reference network: conv-bn-relu stem, one residual block (add fused into ConvAddReLU), pool, flatten, high-precision Linear. */
const tinyResNet = (generator: Generator) =>
  new ConvBnReluNet({
    generator,
    inChannels: 1,
    channels: 8,
    classes: 10,
    convBias: [false, false, false],
    residual: true,
    inputScale: 1 / 128,
  });

const inputs = (n: number, seed: number): Tensor[] => {
  const g = new Generator(seed);
  return Array.from({ length: n }, () => rand([8, 1, 7, 7], { generator: g }).mul(2).sub(1));
};

/** A calibrated QAT model in VALIDATION state, with non-trivial BN statistics. */
function preparedModel(seed = 5): GraphModule {
  const model = tinyResNet(new Generator(seed));
  setBatchNormStats([model.bn1, model.bn2, model.bn3!], 100);
  model.eval();
  return calibratedQat(model, { global: defaultQatQconfig, moduleName: { fc: defaultQatOutQconfig } }, inputs(4, 1));
}

const run = (m: Module, x: Tensor): Float32Array =>
  Float32Array.from((noGrad(() => (m as GraphModule).call(x)) as Tensor).values());

function compare(fake: Float32Array, fixed: Float32Array, classes = 10) {
  let maxDiff = 0;
  let maxAbs = 0;
  let agree = 0;
  const rows = fake.length / classes;
  for (let r = 0; r < rows; r++) {
    let a = 0;
    let b = 0;
    for (let c = 0; c < classes; c++) {
      const i = r * classes + c;
      maxDiff = Math.max(maxDiff, Math.abs(fake[i]! - fixed[i]!));
      maxAbs = Math.max(maxAbs, Math.abs(fake[i]!));
      if (fake[i]! > fake[r * classes + a]!) a = c;
      if (fixed[i]! > fixed[r * classes + b]!) b = c;
    }
    if (a === b) agree++;
  }
  return { maxDiff, maxAbs, agreement: agree / rows };
}

/** Every integer a FixedConv holds, and every other module's printed config. */
function integerState(gm: GraphModule) {
  return gm.namedModules().map(([name, m]) => {
    if (!(m instanceof FixedConv)) return [name, m.constructor.name, m.extraRepr()];
    const c = m.config;
    return [
      name,
      Array.from(c.weight.values()),
      c.bias && Array.from(c.bias),
      c.requant && {
        ...c.requant,
        pre: Array.from(c.requant.pre),
        m: Array.from(c.requant.m),
        n: Array.from(c.requant.n),
      },
      c.sumin && { m: Array.from(c.sumin.m), n: Array.from(c.sumin.n), k: Array.from(c.sumin.k) },
      Array.from(c.outScale),
      c.activation,
    ];
  });
}

const stateOf = (m: Module) =>
  Object.entries(m.stateDict().tensors).map(([k, v]) => [k, v.dtype, v.shape, Array.from(v.values())]);

afterEach(() => resetMarch());

describe.each(['bayes', 'bernoulli2'])('convertFx on a small residual network (%s)', (march) => {
  const gm = preparedModel();
  const quiet = { march, onWarning: () => {} };

  it('(a) the fixed-point outputs are close to the fake-quant outputs and agree on top-1', () => {
    const fx = convertFx(gm, quiet);
    expect(fx.namedModules().some(([, m]) => m instanceof FixedConv && m.config.sumin !== null)).toBe(true); // the residual add is fused
    let agree = 0;
    let rows = 0;
    for (const x of inputs(4, 42)) {
      const fake = run(gm, x);
      const fixed = run(fx, x);
      const c = compare(fake, fixed);
      expect(c.maxDiff).toBeLessThan(0.05 * c.maxAbs + 1e-3);
      agree += c.agreement * 8;
      rows += 8;
    }
    expect(agree / rows).toBeGreaterThanOrEqual(0.9);
  });

  it('(b) converting twice gives the same integers and the same outputs', () => {
    const a = convertFx(gm, quiet);
    const b = convertFx(gm, quiet);
    expect(integerState(a)).toEqual(integerState(b));
    expect(stateOf(a)).toEqual(stateOf(b));
    expect(integerState(a).length).toBeGreaterThan(4);
    const x = inputs(1, 9)[0]!;
    expect(run(a, x)).toEqual(run(b, x));
  });

  it('(c) the QAT model is not modified', () => {
    const x = inputs(1, 10)[0]!;
    const before = stateOf(gm);
    const out = run(gm, x);
    const graphBefore = gm.graph.nodes.map((n) => `${n.op}:${n.target}`);
    const modulesBefore = gm.namedModules().map(([n, m]) => `${n}:${m.constructor.name}`);
    convertFx(gm, quiet);
    expect(stateOf(gm)).toEqual(before);
    expect(run(gm, x)).toEqual(out);
    expect(gm.graph.nodes.map((n) => `${n.op}:${n.target}`)).toEqual(graphBefore);
    expect(gm.namedModules().map(([n, m]) => `${n}:${m.constructor.name}`)).toEqual(modulesBefore);
  });

  it('(d) the high-precision Linear outputs qint32 with a per-channel scale', () => {
    const fx = convertFx(gm, quiet);
    const fc = fx.getSubmodule('fc');
    expect(fc).toBeInstanceOf(FixedConv);
    let seen: QTensor | null = null;
    fc.registerForwardHook((_m, _a, out) => {
      seen = out as QTensor;
    });
    run(fx, inputs(1, 11)[0]!);
    const out = seen as unknown as QTensor;
    expect(out).toBeInstanceOf(QTensor);
    expect(out.dtype).toBe('qint32');
    expect(out.axis).toBe(1);
    expect(out.scale.length).toBe(10);
    expect(new Set(out.scale).size).toBeGreaterThan(1);
    expect((fc as FixedConv).config.requant).toBeNull();
  });

  it('(e) setPreserveQatMode keeps modules as QAT modules between a dequantize and a quantize, by prefix and by type', () => {
    const base = convertFx(gm, quiet);
    expect(base.namedModules().some(([, m]) => m instanceof QatModule)).toBe(false);
    const byPrefix = 'relu2'; // the fused conv2-bn2-relu2
    expect(gm.getSubmodule(byPrefix)).toBeInstanceOf(QatModule);
    try {
      expect(setPreserveQatMode(gm, [byPrefix], ['AdaptiveAvgPool2d'])).toEqual(
        expect.arrayContaining([byPrefix, 'pool']),
      );
      const fx = convertFx(gm, quiet);
      for (const name of [byPrefix, 'pool']) {
        expect(fx.getSubmodule(name)).toBeInstanceOf(QatModule);
        const node = fx.graph.nodes.find((n) => n.op === 'call_module' && n.target === name)!;
        const input = node.inputNodes[0]!;
        expect(input.op === 'call_module' && fx.getSubmodule(input.target).constructor.name).toBe('Dequantize');
        const users = [...node.users];
        expect(users).toHaveLength(1);
        expect(fx.getSubmodule(users[0]!.target).constructor.name).toMatch(/Quantize/);
        expect(fx.getSubmodule(users[0]!.target).constructor.name).not.toBe('Dequantize');
      }
      // the preserved modules are copies: the QAT model's own modules are untouched
      expect(fx.getSubmodule('pool')).not.toBe(gm.getSubmodule('pool'));
      for (const x of inputs(2, 12)) {
        const fake = run(gm, x);
        const c = compare(fake, run(fx, x));
        const c0 = compare(fake, run(base, x));
        expect(c.maxDiff).toBeLessThan(0.05 * c.maxAbs + 1e-3);
        expect(c.agreement).toBeGreaterThanOrEqual(Math.min(c0.agreement, 0.75));
      }
    } finally {
      expect(setPreserveQatMode(gm, [byPrefix], ['AdaptiveAvgPool2d'], false)).toEqual(
        expect.arrayContaining([byPrefix, 'pool']),
      );
    }
    const undone = convertFx(gm, quiet);
    expect(undone.namedModules().some(([, m]) => m instanceof QatModule)).toBe(false);
    expect(integerState(undone)).toEqual(integerState(base));
  });
});

describe('convertFx errors', () => {
  it('(f) reports every node bernoulli2 cannot convert at once, with node, op and march', () => {
    const gm = prepareQatFx(new Conv3dSoftmaxNet().eval(), { global: defaultQatQconfig }, { march: 'bernoulli2' });
    const g = new Generator(3);
    calibrate(gm, [rand([2, 1, 2, 4, 4], { generator: g })]);
    const err = thrownBy(() => convertFx(gm, { march: 'bernoulli2', onWarning: () => {} }));
    expect(err).toBeInstanceOf(ConversionError);
    const ce = err as ConversionError;
    expect(ce.failures.map((f) => [f.node, f.march])).toEqual([
      ['conv3d', 'bernoulli2'],
      ['softmax', 'bernoulli2'],
    ]);
    expect(ce.failures[0]!.op).toMatch(/Conv3d|Conv/);
    expect(ce.failures[1]!.op).toMatch(/Softmax/);
    expect(ce.message).toMatch(/march 'bernoulli2' cannot convert 2 node\(s\)/);
    expect(ce.message).toMatch(/conv3d: .*Conv/);
    expect(ce.message).toMatch(/softmax: .*Softmax/);
  });

  it('(f) also reports the failing nodes after a failing node on the same path', () => {
    class Chain extends Module {
      readonly quant = new QuantStub({ scale: 1 / 128 });
      readonly conv3d = new Conv3d(1, 2, 3, { padding: 1, generator: new Generator(2) });
      readonly softmax = new Softmax({ dim: 1 });
      readonly dequant = new DeQuantStub();
      forward(x: Tensor): Tensor {
        return this.dequant.call(this.softmax.call(this.conv3d.call(this.quant.call(x))));
      }
    }
    const gm = prepareQatFx(new Chain().eval(), { global: defaultQatQconfig }, { march: 'bernoulli2' });
    calibrate(gm, [rand([2, 1, 2, 4, 4], { generator: new Generator(4) })]);
    expect(() => convertFx(gm, { march: 'bernoulli2', onWarning: () => {} })).toThrow(ConversionError);
    try {
      convertFx(gm, { march: 'bernoulli2', onWarning: () => {} });
    } catch (e) {
      expect((e as ConversionError).failures.map((f) => f.node)).toEqual(['conv3d', 'softmax']);
    }
  });

  it('(f) lists each failure with its full reason, parentheses included', () => {
    const failures = [
      new UnsupportedOpError({
        op: 'Conv3d',
        node: 'conv3d',
        march: 'bernoulli2',
        reason: 'kernel (3, 3, 3) is not 2-d',
      }),
      new UnsupportedOpError({ op: 'Softmax', node: 'softmax', march: 'bernoulli2' }),
    ];
    const ce = new ConversionError('bernoulli2', failures);
    expect(ce.message).toContain('  - conv3d: Conv3d (kernel (3, 3, 3) is not 2-d)\n');
    expect(ce.message).toContain('  - softmax: Softmax\n');
  });

  it('ConversionError.isInstance recognises one from another package copy by brand and code', () => {
    class OtherCopyError extends Error {
      readonly code = 'E_CONVERSION';
      readonly failures = [];
    }
    Object.defineProperty(OtherCopyError.prototype, Symbol.for('qtk.error'), { value: true });
    expect(ConversionError.isInstance(new OtherCopyError('other copy'))).toBe(true);
    expect(ConversionError.isInstance(new QConfigError('q'))).toBe(false);
    expect(ConversionError.isInstance(new ConversionError('bayes', []))).toBe(true);
  });

  it('(g) asking bernoulli2 for qint16 fails at prepareQatFx with a QConfigError naming the module', () => {
    setMarch('bernoulli2');
    const err = thrownBy(() =>
      prepareQatFx(tinyResNet(new Generator(1)).eval(), {
        global: defaultQatQconfig,
        moduleName: { conv2: defaultQat16bitQconfig },
      }),
    );
    expect(err).toBeInstanceOf(QConfigError);
    expect((err as Error).message).toMatch(/conv2/);
    expect((err as Error).message).toMatch(/qint16/);
    expect((err as Error).message).toMatch(/bernoulli2/);
    setMarch('bayes');
    expect(() =>
      prepareQatFx(tinyResNet(new Generator(1)).eval(), {
        global: defaultQatQconfig,
        moduleName: { conv2: defaultQat16bitQconfig },
      }),
    ).not.toThrow();
  });
});
