// Tensors the model holds (a class token, a position embedding) as operands of quantized ops: the
// converted model carries them, and where they enter without a QuantStub they are quantized there.
import '@qtk/march-bayes';
import { defaultQatQconfig } from '@qtk/fake-quant';
import { Quantize } from '@qtk/fixed-point';
import { DeQuantStub, Module, Parameter, QuantStub } from '@qtk/nn';
import { cat, Generator, noGrad, randn, type Tensor, tensor } from '@qtk/tensor';
import { afterEach, describe, expect, it } from 'vitest';
import { convertFx, resetMarch, setMarch } from './index.js';
import { calibratedQat, callModel, maxSteps, outputStep } from './testing/convert-harness.js';

const g = new Generator(3);

/** A position embedding added after its own QuantStub (horizon_plugin_pytorch's way for auxiliary inputs). */
class StubbedPosition extends Module {
  readonly quant = new QuantStub();
  readonly quantPosition = new QuantStub();
  readonly dequant = new DeQuantStub();
  readonly position = new Parameter(randn([1, 4, 8], { generator: g }));
  forward(x: Tensor): Tensor {
    return this.dequant.call(this.quant.call(x).add(this.quantPosition.call(this.position)));
  }
}

/** A class token concatenated and a position embedding added as plain parameters, as a PyTorch ViT writes them. */
class PlainTokens extends Module {
  readonly quant = new QuantStub();
  readonly dequant = new DeQuantStub();
  readonly classToken = new Parameter(randn([1, 1, 8], { generator: g, std: 2 }));
  readonly position = new Parameter(randn([1, 5, 8], { generator: g, std: 0.5 }));
  forward(x: Tensor): Tensor {
    const tokens = cat([this.classToken.expand([2, 1, 8]), this.quant.call(x)], 1);
    return this.dequant.call(tokens.add(this.position));
  }
}

afterEach(() => resetMarch());

describe('constant operands on bayes', () => {
  it('the converted model carries the parameters its graph reads (a QuantStub on a position embedding)', () => {
    setMarch('bayes');
    const batches = [randn([2, 4, 8], { generator: g }), randn([2, 4, 8], { generator: g })];
    const qat = calibratedQat(new StubbedPosition(), { global: defaultQatQconfig }, batches);
    const fixed = convertFx(qat, { onWarning: () => {} });
    // a copy, not the QAT model's tensor
    expect((fixed as unknown as { position: Tensor }).position).not.toBe(
      (qat as unknown as { position: Tensor }).position,
    );
    const x = batches[1]!;
    const steps = noGrad(() => maxSteps(callModel(fixed, x), callModel(qat, x), outputStep(qat)));
    expect(steps).toBeLessThanOrEqual(1);
  });

  it('a class token and a position embedding without stubs are quantized where they enter, with their own scales', () => {
    setMarch('bayes');
    const batches = [randn([2, 4, 8], { generator: g }), randn([2, 4, 8], { generator: g })];
    const model = new PlainTokens();
    const qat = calibratedQat(model, { global: defaultQatQconfig }, batches);
    const fixed = convertFx(qat, { onWarning: () => {} });
    const quantizes = fixed.modules().filter((m): m is Quantize => m instanceof Quantize);
    expect(quantizes).toHaveLength(3); // the input, the class token, the position embedding
    // each constant's scale is its own range over 127.5 (symmetric int8, min-max)
    const absMax = (t: Tensor) => Math.max(...Array.from(t.values(), Math.abs));
    const scales = quantizes.map((q) => q.scale).sort((a, b) => a - b);
    for (const p of [model.classToken, model.position])
      expect(scales.some((s) => Math.abs(s - absMax(p) / 127.5) < 1e-6 * s + 1e-9)).toBe(true);
    const x = batches[0]!;
    const steps = noGrad(() => maxSteps(callModel(fixed, x), callModel(qat, x), outputStep(qat)));
    expect(steps).toBeLessThanOrEqual(1);
  });
});

/** An attention's scaling as PyTorch writes it (`/ √d`, a number) and as ONNX imports it (a one-element tensor). */
class ScaledScores extends Module {
  readonly quant = new QuantStub();
  readonly dequant = new DeQuantStub();
  readonly scale = new Parameter(tensor([Math.sqrt(8)]));
  forward(x: Tensor): Tensor {
    const q = this.quant.call(x);
    return this.dequant.call(q.div(Math.sqrt(8)).add(q.div(this.scale)));
  }
}

describe('division by a constant on bayes', () => {
  it('x / c, with c a number or a one-element tensor, converts to a multiply by 1/c (no reciprocal table)', () => {
    setMarch('bayes');
    const batches = [randn([4, 16], { generator: g, std: 4 }), randn([4, 16], { generator: g, std: 4 })];
    const qat = calibratedQat(new ScaledScores(), { global: defaultQatQconfig }, batches);
    const fixed = convertFx(qat, { onWarning: () => {} });
    const kinds = fixed.graph.nodes
      .filter((n) => n.op === 'call_module')
      .map((n) => fixed.getSubmodule(n.target).constructor.name);
    expect(kinds).toEqual(['Quantize', 'FixedMul', 'FixedMul', 'FixedAdd', 'Dequantize']);
    const x = batches[1]!;
    const steps = noGrad(() => maxSteps(callModel(fixed, x), callModel(qat, x), outputStep(qat)));
    expect(steps).toBeLessThanOrEqual(1);
  });
});
