// Modules called inside fxWrap-ed methods (RetinaNet-style post-processing) get their qconfig, are
// swapped for QAT modules at prepare and converted to the march's fixed-point modules.
import { defaultQatQconfig, FakeQuantize } from '@qtk/fake-quant';
import { FixedConv } from '@qtk/fixed-point';
import { fxWrap } from '@qtk/ir';
import '@qtk/march-bayes';
import '@qtk/march-bernoulli2';
import { Conv2d, DeQuantStub, Module, QuantStub, ReLU, Sigmoid, Softmax } from '@qtk/nn';
import { Generator, noGrad, rand, type Tensor } from '@qtk/tensor';
import { afterEach, describe, expect, it } from 'vitest';
import { calibrate, ConversionError, convertFx, prepareQatFx, QatModule, resetMarch, setMarch } from './index.js';
import { LateConvertedModule } from './wrapped-conversion.js';

const g = new Generator(41);

/** A float helper module the post-processing calls (no qconfig matters: it has nothing to quantize). */
class Offsets extends Module {
  forward(x: Tensor): Tensor {
    return x.mul(0.5).add(0.25);
  }
}

class Detector extends Module {
  readonly quant = new QuantStub();
  readonly conv = new Conv2d(2, 4, 3, { padding: 1, generator: g });
  readonly relu = new ReLU();
  // called only inside the wrapped method
  readonly refine = new Conv2d(4, 4, 1, { generator: g });
  readonly score = new Sigmoid();
  readonly dequant = new DeQuantStub();
  readonly offsets = new Offsets();

  forward(x: Tensor): Tensor {
    return this.postProcess(this.relu.call(this.conv.call(this.quant.call(x))));
  }

  @fxWrap()
  postProcess(feat: Tensor): Tensor {
    const s = this.dequant.call(this.score.call(this.refine.call(feat)));
    // a data-dependent branch that tracing would have frozen
    if (this.training) return s;
    return this.offsets.call(s);
  }
}

const batch = (seed: number) =>
  rand([3, 2, 5, 5], { generator: new Generator(seed) })
    .mul(2)
    .sub(1);
const run = (m: Module, x: Tensor) => noGrad(() => (m as unknown as { call(x: Tensor): Tensor }).call(x));

afterEach(() => resetMarch());

describe('modules called inside fxWrap-ed methods', () => {
  it('get their qconfig and QAT form at prepare, observe data in calibration, and convert to fixed-point modules on first call', () => {
    setMarch('bayes');
    const float = new Detector().eval();
    const qat = prepareQatFx(float, { global: defaultQatQconfig }, { onWarning: () => {} });
    // the graph has one opaque node for postProcess; refine and score have no node of their own
    expect(
      qat.graph.nodes.filter((n) => n.op === 'call_module' && (n.target === 'refine' || n.target === 'score')),
    ).toEqual([]);
    const refine = qat.getSubmodule('refine') as QatModule;
    expect(refine).toBeInstanceOf(QatModule);
    expect(refine.weightFakeQuant).toBeInstanceOf(FakeQuantize);
    expect((qat.getSubmodule('score') as QatModule).activationPostProcess).toBeInstanceOf(FakeQuantize);
    expect(qat.getSubmodule('offsets')).toBeInstanceOf(Offsets); // nothing to quantize
    expect(float.refine).toBeInstanceOf(Conv2d); // the float model is untouched

    calibrate(qat, [1, 2, 3].map(batch));
    expect(refine.activationPostProcess!.isInitialized).toBe(true); // the wrapped code ran with the QAT modules
    const x = batch(7);
    const fake = run(qat, x);
    expect(fake.values()).not.toEqual(run(float, x).values()); // quantized inside the wrapped method too

    const fixed = convertFx(qat, { onWarning: () => {} });
    const late = fixed.getSubmodule('refine');
    expect(late).toBeInstanceOf(LateConvertedModule);
    const got = run(fixed, x);
    // the first call built the march's module for refine from the quantized input it received
    const built = [...(late as unknown as { built: Map<string, { module: Module }> }).built.values()];
    expect(built).toHaveLength(1);
    expect(built[0]!.module).toBeInstanceOf(FixedConv);
    const step = (qat.getSubmodule('score') as QatModule).activationPostProcess!.calculateQparams().scale[0]!;
    const w = fake.values();
    const c = got.values();
    let worst = 0;
    for (let i = 0; i < w.length; i++) worst = Math.max(worst, Math.abs(w[i]! - c[i]!));
    expect(worst).toBeLessThanOrEqual(0.5 * step + 1e-6); // one step of score's output, times offsets' 0.5
    // a second call with the same input qparams reuses it
    run(fixed, batch(8));
    expect((late as unknown as { built: Map<string, Module> }).built.size).toBe(1);
  });

  it('a qconfig moduleName entry reaches them: null keeps refine float in the QAT and the converted model', () => {
    setMarch('bayes');
    const qat = prepareQatFx(
      new Detector().eval(),
      { global: defaultQatQconfig, moduleName: { refine: null } },
      { onWarning: () => {} },
    );
    expect(qat.getSubmodule('refine')).toBeInstanceOf(Conv2d);
    calibrate(qat, [1, 2].map(batch));
    // refine is float, so its input must be float: a converted model that hands it the quantized
    // feature map says so, naming the module
    const fixed = convertFx(qat, { onWarning: () => {} });
    expect(() => run(fixed, batch(3))).toThrow(/refine/);
  });

  it('an op the march cannot convert inside a wrapped method is a ConversionError at its first call, naming the module and the march', () => {
    class WithSoftmax extends Detector {
      readonly probs = new Softmax(1);
      override forward(x: Tensor): Tensor {
        return this.post2(this.relu.call(this.conv.call(this.quant.call(x))));
      }
      @fxWrap()
      post2(feat: Tensor): Tensor {
        return this.dequant.call(this.probs.call(this.refine.call(feat)));
      }
    }
    setMarch('bernoulli2');
    const qat = prepareQatFx(new WithSoftmax().eval(), { global: defaultQatQconfig }, { onWarning: () => {} });
    expect(qat.getSubmodule('probs')).toBeInstanceOf(QatModule);
    calibrate(qat, [batch(1)]);
    const fixed = convertFx(qat, { onWarning: () => {} });
    let err: unknown;
    try {
      run(fixed, batch(2));
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConversionError);
    expect((err as Error).message).toMatch(/march 'bernoulli2' cannot convert 1 node\(s\):\n {2}- probs: /);
  });
});
