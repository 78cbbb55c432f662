import { defaultQat16bitQconfig, defaultQatOutQconfig, defaultQatQconfig } from '@qtk/fake-quant';
import { QTensor, requantizeValue } from '@qtk/fixed-point';
import type { GraphModule } from '@qtk/ir';
import '@qtk/march-bayes';
import '@qtk/march-bernoulli2';
import { Conv2d, DeQuantStub, deepCopy, Module, QuantStub, ReLU } from '@qtk/nn';
import { Generator, noGrad, rand, type Tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { ConversionError, convertFx } from './index.js';
import { calibratedQat, thrownBy } from './testing/convert-harness.js';

/** conv → relu → a second QuantStub in the middle of the quantized region → conv → dequant. */
class MidStubNet extends Module {
  readonly quant = new QuantStub({ scale: 1 / 128 });
  readonly conv1: Conv2d;
  readonly relu = new ReLU();
  readonly quant2: QuantStub;
  readonly conv2: Conv2d;
  readonly dequant = new DeQuantStub();
  constructor(g: Generator, stub2Scale?: number) {
    super();
    this.conv1 = new Conv2d(2, 4, 3, { padding: 1, generator: g });
    this.conv2 = new Conv2d(4, 3, 3, { padding: 1, generator: g });
    this.quant2 = new QuantStub(stub2Scale !== undefined ? { scale: stub2Scale } : {});
  }
  forward(x: Tensor): Tensor {
    return this.dequant.call(this.conv2.call(this.quant2.call(this.relu.call(this.conv1.call(this.quant.call(x))))));
  }
}

const batches = (n: number, seed: number): Tensor[] => {
  const g = new Generator(seed);
  return Array.from({ length: n }, () => rand([2, 2, 6, 6], { generator: g }).mul(2).sub(1));
};

/** The value a named node of the model produces for `x` (a copy of the model that outputs it). */
function valueAt(gm: GraphModule, x: Tensor, name: string): unknown {
  const tap = deepCopy(gm);
  const node = tap.graph.node(name);
  if (!node) throw new Error(`no node '${name}'`);
  tap.graph.outputNode!.args = [node];
  tap.recompile();
  return noGrad(() => tap.call(x));
}

describe('convertFx: a QuantStub inside the quantized region (segmented deployment)', () => {
  for (const march of ['bayes', 'bernoulli2'] as const) {
    it(`${march}: requantizes the quantized input to the stub's own scale with the march's rule, exactly`, () => {
      // a fixed stub scale: an observed one would see what relu's fake-quant saw, the same scale
      const model = new MidStubNet(new Generator(3), 0.0123);
      model.eval();
      const qat = calibratedQat(model, { global: defaultQatQconfig }, batches(3, 1), {
        prepare: { march },
      });
      const fixed = convertFx(qat, { march, onWarning: () => {} });
      for (const x of batches(2, 9)) {
        const before = valueAt(fixed, x, 'relu') as QTensor;
        const after = valueAt(fixed, x, 'quant2') as QTensor;
        expect(before).toBeInstanceOf(QTensor);
        expect(after).toBeInstanceOf(QTensor);
        expect(after.dtype).toBe('qint8');
        expect(after.scale[0]).not.toBe(before.scale[0]);
        // the requantize plan the march plans for s_in → s_stub, applied to every integer
        const plan = (fixed.getSubmodule('quant2') as unknown as { output: { plan: never } }).output.plan;
        const want = Array.from(before.ints(), (v) => requantizeValue(v, plan));
        expect(Array.from(after.ints())).toEqual(want);
      }
      // the whole model still agrees with its fake-quant twin within a step or so
      const x = batches(1, 4)[0]!;
      const want = noGrad(() => qat.call(x) as Tensor).values();
      const got = noGrad(() => fixed.call(x) as Tensor).values();
      const worst = Math.max(...Array.from(want, (w, i) => Math.abs(w - got[i]!)));
      expect(worst).toBeLessThan(0.1);
    });
  }

  it('passes the integers through when the stub observes the scale its input already has', () => {
    // horizon_plugin_pytorch's recipe: the inserted stub has no fixed scale, so it observes the
    // values relu's fake-quant observed and gets the same scale
    const model = new MidStubNet(new Generator(2));
    model.eval();
    const qat = calibratedQat(model, { global: defaultQatQconfig }, batches(2, 1), { prepare: { march: 'bayes' } });
    const fixed = convertFx(qat, { march: 'bayes', onWarning: () => {} });
    const x = batches(1, 5)[0]!;
    const before = valueAt(fixed, x, 'relu') as QTensor;
    const after = valueAt(fixed, x, 'quant2') as QTensor;
    expect(after.scale).toEqual(before.scale);
    expect(after.dtype).toBe(before.dtype);
    expect((fixed.getSubmodule('quant2') as unknown as { output: unknown }).output).toBeNull();
    expect(Array.from(after.ints())).toEqual(Array.from(before.ints()));
    expect(Array.from(before.ints()).some((v) => v > 0)).toBe(true);
  });

  it('bayes: an int16 stub after an int8 value requantizes into int16', () => {
    const model = new MidStubNet(new Generator(4));
    model.eval();
    const qat = calibratedQat(
      model,
      { global: defaultQatQconfig, moduleName: { quant2: defaultQat16bitQconfig, conv2: defaultQat16bitQconfig } },
      batches(3, 1),
      { prepare: { march: 'bayes' } },
    );
    const fixed = convertFx(qat, { march: 'bayes', onWarning: () => {} });
    const x = batches(1, 6)[0]!;
    const before = valueAt(fixed, x, 'relu') as QTensor;
    const after = valueAt(fixed, x, 'quant2') as QTensor;
    expect(before.dtype).toBe('qint8');
    expect(after.dtype).toBe('qint16');
    const plan = (fixed.getSubmodule('quant2') as unknown as { output: { plan: never } }).output.plan;
    expect(Array.from(after.ints())).toEqual(Array.from(before.ints(), (v) => requantizeValue(v, plan)));
    // an int16 grid 256x finer: the integers are the int8 ones scaled by about s_in / s_out
    const ratio = before.scale[0]! / after.scale[0]!;
    const ints = after.ints();
    const worst = Math.max(...Array.from(before.ints(), (v, i) => Math.abs(ints[i]! - v * ratio)));
    expect(worst).toBeLessThanOrEqual(1);
  });

  it('refuses a stub after a high-precision (per-channel qint32) output, naming the node and what to do', () => {
    const model = new MidStubNet(new Generator(5));
    model.eval();
    const qat = calibratedQat(
      model,
      { global: defaultQatQconfig, moduleName: { conv1: defaultQatOutQconfig } },
      batches(2, 1),
      { prepare: { march: 'bayes', onWarning: () => {} } },
    );
    const e = thrownBy(() => convertFx(qat, { march: 'bayes', onWarning: () => {} }));
    expect(e).toBeInstanceOf(ConversionError);
    const failure = (e as ConversionError).failures.find((f) => f.node === 'quant2');
    expect(failure?.op).toBe('QuantStub');
    expect(failure?.reason).toMatch(/quantized per channel.*place it after a per-tensor activation/);
  });
});
