// Guards for horizon_plugin_pytorch's "common misunderstandings": prepare without a march, a
// low-precision output layer, a shared module, qconfigs after the DeQuantStub, a FloatFunctional
// called twice (which is fine in QTK: each call has its own output scale).
import { defaultQatOutQconfig, defaultQatQconfig, type FakeQuantize } from '@qtk/fake-quant';
import type { GraphModule } from '@qtk/ir';
import '@qtk/march-bayes';
import { Conv2d, DeQuantStub, FloatFunctional, Flatten, Linear, Module, QuantStub, ReLU } from '@qtk/nn';
import { QConfigError } from '@qtk/spec';
import { Generator, randn, type Tensor } from '@qtk/tensor';
import { afterEach, describe, expect, it } from 'vitest';
import { convertFx, getMarch, prepareQatFx, resetMarch, setMarch } from './index.js';
import { callModel, calibratedQat, maxSteps } from './testing/convert-harness.js';

const g = new Generator(31);

class Classifier extends Module {
  readonly quant = new QuantStub();
  readonly conv = new Conv2d(1, 4, 3, { generator: g });
  readonly relu = new ReLU();
  readonly flatten = new Flatten();
  readonly fc = new Linear(4 * 4 * 4, 3, { generator: g });
  readonly dequant = new DeQuantStub();
  forward(x: Tensor): Tensor {
    return this.dequant.call(this.fc.call(this.flatten.call(this.relu.call(this.conv.call(this.quant.call(x))))));
  }
}

const collect = (qat: () => unknown): string[] => {
  const warnings: string[] = [];
  const original = console.warn;
  console.warn = (m: string) => warnings.push(m);
  try {
    qat();
  } finally {
    console.warn = original;
  }
  return warnings;
};

afterEach(() => resetMarch());

describe('prepare guards', () => {
  it('(a) prepare without a march is an error naming setMarch and the march option; the option works without setMarch', () => {
    resetMarch();
    const err = (() => {
      try {
        prepareQatFx(new Classifier().eval(), { global: defaultQatQconfig });
      } catch (e) {
        return e;
      }
      return null;
    })();
    expect(err).toBeInstanceOf(QConfigError);
    expect((err as Error).message).toMatch(/no march selected/);
    expect((err as Error).message).toMatch(/setMarch\('bayes'\)/);
    expect((err as Error).message).toMatch(/\{ march: 'bayes' \}/);
    const qat = prepareQatFx(
      new Classifier().eval(),
      { global: defaultQatQconfig, moduleName: { fc: defaultQatOutQconfig } },
      { march: 'bayes', onWarning: () => {} },
    );
    expect(qat.getSubmodule('fc')).toBeDefined();
    expect(getMarch()).toBeNull(); // the option does not change the global selection
  });

  it('(b) an output conv/linear quantized to int8 gets a warning naming the layer and the "out" qconfig; with it, none', () => {
    setMarch('bayes');
    const warnings: string[] = [];
    prepareQatFx(new Classifier().eval(), { global: defaultQatQconfig }, { onWarning: (m) => warnings.push(m) });
    expect(warnings).toEqual([
      expect.stringMatching(
        /output layer 'fc' \(Linear\) is quantized to qint8 before 'dequant'.*moduleName: \{ 'fc': defaultQatOutQconfig \}/,
      ),
    ]);
    const none: string[] = [];
    prepareQatFx(
      new Classifier().eval(),
      { global: defaultQatQconfig, moduleName: { fc: defaultQatOutQconfig } },
      { onWarning: (m) => none.push(m) },
    );
    expect(none).toEqual([]);
    // the default sink is console.warn, prefixed with [qtk]
    expect(collect(() => prepareQatFx(new Classifier().eval(), { global: defaultQatQconfig }))).toEqual([
      expect.stringMatching(/^\[qtk\] the output layer 'fc'/),
    ]);
  });

  it('(c) a module called twice gets a warning naming it and its call sites: its calls share one scale', () => {
    class Shared extends Module {
      readonly quant = new QuantStub();
      readonly sharedConv = new Conv2d(2, 2, 1, { generator: g });
      readonly add = new FloatFunctional();
      readonly dequant = new DeQuantStub();
      forward(x: Tensor): Tensor {
        const q = this.quant.call(x);
        const a = this.sharedConv.call(q);
        const b = this.sharedConv.call(a.mul(4)); // a four times larger range through the same module
        return this.dequant.call(this.add.add(a, b));
      }
    }
    setMarch('bayes');
    const warnings: string[] = [];
    const qat = prepareQatFx(
      new Shared().eval(),
      { global: defaultQatQconfig },
      { onWarning: (m) => warnings.push(m) },
    );
    const shared = warnings.filter((w) => w.includes('sharedConv'));
    expect(shared).toEqual([
      expect.stringMatching(
        /'sharedConv' \(Conv2d\) is called 2 times \(at nodes sharedConv, sharedConv_1\): its calls share one output scale/,
      ),
    ]);
    expect(qat.graph.nodes.filter((n) => n.target === 'sharedConv')).toHaveLength(2);
  });

  it('(d) qconfigs on ops after the DeQuantStub warn, naming them; null qconfigs there do not', () => {
    class WithLoss extends Module {
      readonly quant = new QuantStub();
      readonly conv = new Conv2d(1, 2, 1, { generator: g });
      readonly dequant = new DeQuantStub();
      readonly post = new Linear(2, 2, { generator: g });
      forward(x: Tensor): Tensor {
        const y = this.dequant.call(this.conv.call(this.quant.call(x)));
        return this.post.call(y.mean([2, 3]));
      }
    }
    setMarch('bayes');
    const warnings: string[] = [];
    prepareQatFx(
      new WithLoss().eval(),
      { global: defaultQatQconfig, moduleName: { conv: defaultQatOutQconfig } },
      { onWarning: (m) => warnings.push(m) },
    );
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/after a DeQuantStub/);
    expect(warnings[0]).toMatch(/'post' \(Linear\) after 'dequant'/);
    expect(warnings[0]).toMatch(/qconfig null/);
    const none: string[] = [];
    prepareQatFx(
      new WithLoss().eval(),
      { global: defaultQatQconfig, moduleName: { conv: defaultQatOutQconfig, post: null } },
      { onWarning: (m) => none.push(m) },
    );
    expect(none.filter((w) => w.includes("'post'"))).toEqual([]);
  });

  it('(e) a FloatFunctional called twice is not warned about: each call gets its own output fake-quant, and conversion keeps both scales', () => {
    class Twice extends Module {
      readonly quant = new QuantStub();
      readonly ff = new FloatFunctional();
      readonly dequant = new DeQuantStub();
      forward(x: Tensor): Tensor {
        const q = this.quant.call(x);
        return this.dequant.call(this.ff.add(this.ff.add(q, q), q)); // 2x, then 3x: different ranges
      }
    }
    setMarch('bayes');
    const warnings: string[] = [];
    const batches = [1, 2, 3].map((s) => randn([2, 8], { generator: new Generator(s) }));
    const qat = calibratedQat(new Twice().eval(), { global: defaultQatQconfig }, batches, {
      prepare: { onWarning: (m) => warnings.push(m) },
    });
    expect(warnings).toEqual([]);
    const fqs = qat.graph.nodes
      .filter((n) => n.op === 'call_module' && n.target === 'ff')
      .map((n) => qat.getSubmodule([...n.users][0]!.target) as FakeQuantize);
    expect(fqs).toHaveLength(2);
    expect(fqs[0]).not.toBe(fqs[1]);
    const [s0, s1] = fqs.map((f) => f.calculateQparams().scale[0]!);
    expect(s1! / s0!).toBeCloseTo(1.5, 1); // each call observed its own range
    const fixed = convertFx(qat) as GraphModule;
    // each call converts to its own module (the second at ff_call1), with its own scale
    const targets = fixed.graph.nodes
      .filter((n) => n.op === 'call_module' && /^ff/.test(n.target))
      .map((n) => n.target);
    expect(targets).toEqual(['ff', 'ff_call1']);
    const x = randn([2, 8], { generator: new Generator(9) });
    expect(maxSteps(callModel(qat, x), callModel(fixed, x), s1!)).toBeLessThanOrEqual(1);
  });
});
