import { defaultQat16bitQconfig, defaultQatOutQconfig, defaultQatQconfig } from '@qtk/fake-quant';
import { centeredYuvInput, type QTensor, Quantize, YuvInputQuantize } from '@qtk/fixed-point';
import type { GraphModule } from '@qtk/ir';
import '@qtk/march-bayes';
import '@qtk/march-bernoulli2';
import { Conv2d, DeQuantStub, Module, QuantStub } from '@qtk/nn';
import { OptionsError } from '@qtk/spec';
import { ConvBnReluNet } from '@qtk/test-models';
import {
  centeredYuv2Rgb,
  Generator,
  noGrad,
  rand,
  rgb2CenteredYuv,
  tensor,
  type Tensor,
  type YuvSwing,
} from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { convertFx, insertYuvInput, modelFromBytes, modelToBytes, type QConfigDict } from './index.js';
import { calibratedQat, setBatchNormStats } from './testing/convert-harness.js';

const MEAN = [0.485, 0.456, 0.406];
const STD = [0.229, 0.224, 0.225];

/** A small image classifier: conv-bn-relu ×2 on an RGB image, pool, high-precision Linear. */
const smallConvNet = (generator: Generator) =>
  new ConvBnReluNet({ generator, inChannels: 3, channels: 8, classes: 10, convBias: [true, true], residual: false });

/** Random RGB images, integer levels 0..255, [n, 3, h, w]. */
const rgbImages = (n: number, seed: number, size = 7): Tensor =>
  rand([n, 3, size, size], { low: 0, high: 256, generator: new Generator(seed) }).floor();

/** ((rgb / 255) − mean) / std per channel, in float32 as a training pipeline computes it. */
const normalize = (rgb: Tensor): Tensor =>
  rgb
    .div(255)
    .sub(tensor(MEAN, [1, 3, 1, 1]))
    .div(tensor(STD, [1, 3, 1, 1]));

function fixedModel(march: string, qconfig: QConfigDict): GraphModule {
  const model = smallConvNet(new Generator(7));
  setBatchNormStats([model.bn1, model.bn2], 40);
  model.eval();
  const batches = [0, 1, 2].map((i) => normalize(rgbImages(8, 100 + i)));
  const qat = calibratedQat(model, qconfig, batches, { prepare: { march } });
  return convertFx(qat, { march, onWarning: () => {} });
}

const INT8 = { global: defaultQatQconfig, moduleName: { fc: defaultQatOutQconfig } };
const INPUT_INT16 = { ...INT8, moduleName: { ...INT8.moduleName, quant: defaultQat16bitQconfig } };
const MODELS: [string, string, QConfigDict][] = [
  ['bernoulli2', 'qint8 input', INT8],
  ['bayes', 'qint8 input', INT8],
  ['bayes', 'qint16 input', INPUT_INT16],
];

const call = (m: Module, x: unknown): unknown => noGrad(() => (m as unknown as { call(a: unknown): unknown }).call(x));
const ints = (q: unknown): ArrayLike<number> => (q as QTensor).ints();

interface Diff {
  /** Share of elements that differ. */
  differing: number;
  /** Largest difference, in steps of `step`. */
  maxSteps: number;
}
function diff(a: ArrayLike<number>, b: ArrayLike<number>, step = 1): Diff {
  let n = 0;
  let worst = 0;
  for (let i = 0; i < a.length; i++) {
    const d = Math.abs(a[i]! - b[i]!) / step;
    if (d > 1e-6) n++;
    worst = Math.max(worst, d);
  }
  return { differing: n / a.length, maxSteps: worst };
}
function argmaxAgreement(a: ArrayLike<number>, b: ArrayLike<number>, classes = 10): number {
  let agree = 0;
  const rows = a.length / classes;
  const argmax = (v: ArrayLike<number>, r: number) => {
    let k = 0;
    for (let c = 1; c < classes; c++) if (v[r * classes + c]! > v[r * classes + k]!) k = c;
    return k;
  };
  for (let r = 0; r < rows; r++) if (argmax(a, r) === argmax(b, r)) agree++;
  return agree / rows;
}

describe('insertYuvInput on a converted conv model', () => {
  it('keeps its output through a model file and refuses models and inputs it cannot convert', () => {
    const fixed = fixedModel('bayes', INT8);
    const yuvModel = insertYuvInput(fixed, { swing: 'full', mean: MEAN, std: STD, order: 'rgb' });
    const yuvIn = centeredYuvInput(rgb2CenteredYuv(rgbImages(4, 9), 'full'));
    const loaded = modelFromBytes(modelToBytes(yuvModel));
    expect(loaded.kind).toBe('fixed-point');
    expect(loaded.model.getSubmodule('quant')).toBeInstanceOf(YuvInputQuantize);
    expect(Array.from((call(loaded.model, yuvIn) as Tensor).values())).toEqual(
      Array.from((call(yuvModel, yuvIn) as Tensor).values()),
    );
    // a float image into the YUV model is refused with what to pass instead
    expect(() => call(yuvModel, normalize(rgbImages(1, 1)))).toThrow(/qint8 QTensor of scale 1/);
    // the YUV input is the Quantize's replacement: the model has none left to replace
    expect(() => insertYuvInput(yuvModel, { swing: 'full', mean: MEAN, std: STD })).toThrow(
      /no Quantize takes a model input/,
    );
    expect(() => insertYuvInput(fixed, { swing: 'full', mean: MEAN, std: STD, input: 'nope' })).toThrow(
      /no quantized input 'nope'; the inputs going into a Quantize are 'x' \(quant\)/,
    );
    expect(() => insertYuvInput(fixed, { swing: 'wide' as 'full', mean: MEAN, std: STD })).toThrow(OptionsError);
    expect(() => insertYuvInput(fixed, { swing: 'full', mean: MEAN, std: [0.2, -1, 0.2] })).toThrow(
      /std must be positive/,
    );
    const qat = calibratedQat(smallConvNet(new Generator(1)).eval(), INT8, [normalize(rgbImages(2, 3))]);
    expect(() => insertYuvInput(qat, { swing: 'full', mean: MEAN, std: STD })).toThrow(
      /is a qat model; convert it first/,
    );
  });

  it('refuses an input that feeds more than its Quantize, and a Quantize called twice', () => {
    const fixed = fixedModel('bayes', INT8);
    const x = fixed.graph.placeholders[0]!;
    // a second use of the image input (as a hand edit could add)
    fixed.graph.insertingAfter(x, () => fixed.graph.callMethod('mean', [x]));
    expect(() => insertYuvInput(fixed, { swing: 'full', mean: 0.5, std: 0.5 })).toThrow(
      /the input 'x' also feeds 'mean', which would receive YUV bytes/,
    );
    const shared = fixedModel('bayes', INT8);
    const y = shared.graph.placeholders[0]!;
    shared.graph.insertingAfter(y, () => shared.graph.callModule('quant', [y]));
    expect(() => insertYuvInput(shared, { swing: 'full', mean: 0.5, std: 0.5, input: 'x' })).toThrow(
      /the Quantize 'quant' is also called by 'quant(_1)?'; give the image input a Quantize of its own/,
    );
  });

  for (const [march, label, qconfig] of MODELS) {
    for (const swing of ['full', 'studio'] as YuvSwing[]) {
      it(`${march}, ${label}, ${swing} swing: equals the RGB path fed the YUV round trip, and the original RGB within the YUV rounding`, () => {
        const fixed = fixedModel(march, qconfig);
        const yuvModel = insertYuvInput(fixed, { swing, mean: MEAN, std: STD });
        expect(yuvModel.getSubmodule('quant')).toBeInstanceOf(YuvInputQuantize);
        expect(fixed.getSubmodule('quant')).toBeInstanceOf(Quantize); // the original is untouched
        const quant = fixed.getSubmodule('quant') as Quantize;

        const rgb = rgbImages(256, 7);
        const yuv = rgb2CenteredYuv(rgb, swing);
        const yuvIn = centeredYuvInput(yuv);
        const roundTrip = normalize(centeredYuv2Rgb(yuv, swing));

        // the input quantize: the YUV module against the Quantize fed the round trip / the original RGB
        const qYuv = ints(call(yuvModel.getSubmodule('quant'), yuvIn));
        const inRoundTrip = diff(qYuv, ints(call(quant, roundTrip)));
        const inRgb = diff(qYuv, ints(call(quant, normalize(rgb))));
        // the model's float output, differences as a share of its largest magnitude
        const out = (gm: GraphModule, x: unknown) => (call(gm, x) as Tensor).values();
        const outYuv = out(yuvModel, yuvIn);
        const range = Math.max(...Array.from(outYuv, Math.abs));
        const outRgbPath = out(fixed, normalize(rgb));
        const outRoundTrip = diff(outYuv, out(fixed, roundTrip), range);
        const outRgb = diff(outYuv, outRgbPath, range);

        if (quant.dtype === 'qint8') {
          // measured: identical integers and outputs on all 256 images, both marches, both swings
          expect(inRoundTrip).toEqual({ differing: 0, maxSteps: 0 });
          expect(outRoundTrip).toEqual({ differing: 0, maxSteps: 0 });
        } else {
          // qint16: the float32 RGB path resolves a step only to ~0.003, so inputs within that of a rounding
          // tie go either way; measured 0.10% of the inputs off by one, 0.4% of the outputs by < 0.3% of the range
          expect(inRoundTrip.maxSteps).toBe(1);
          expect(inRoundTrip.differing).toBeLessThan(0.002);
          expect(outRoundTrip.differing).toBeLessThan(0.01);
          expect(outRoundTrip.maxSteps).toBeLessThan(0.005);
        }
        // against the original RGB: the YUV bytes are rounded, ≤ 1.39 (full) / 1.59 (studio) RGB levels per channel
        const levels = swing === 'full' ? 1.387 : 1.591;
        const stepsPerLevel = Math.max(...STD.map((sd) => 1 / (255 * sd * quant.scale)));
        expect(inRgb.maxSteps).toBeLessThanOrEqual(Math.ceil(levels * stepsPerLevel) + 1);
        expect(outRgb.maxSteps).toBeLessThan(0.02); // measured ≤ 0.012
        expect(argmaxAgreement(outYuv, outRgbPath)).toBeGreaterThanOrEqual(0.99); // measured 254 to 256 of 256
      });
    }
  }
});

describe('centeredYuv2Rgb inside a model (trained on YUV bytes, converting them itself)', () => {
  class YuvNet extends Module {
    readonly quant = new QuantStub({ scale: 2 / 255 });
    readonly conv = new Conv2d(3, 4, 3, { generator: new Generator(1) });
    readonly dequant = new DeQuantStub();
    forward(yuv: Tensor): Tensor {
      return this.dequant.call(this.conv.call(this.quant.call(centeredYuv2Rgb(yuv, 'full'))));
    }
  }

  it('passes the gradient to its input, traces as one node before the QuantStub and stays float through convertFx', () => {
    const model = new YuvNet();
    const yuv = rgb2CenteredYuv(rgbImages(2, 4, 6), 'full');
    const leaf = yuv.detach();
    leaf.requiresGrad = true;
    model.call(leaf).sum().backward();
    expect(Math.max(...Array.from(leaf.grad!.values(), Math.abs))).toBeGreaterThan(0);
    model.eval();
    // YuvNet has no 'fc': INT8's entry for it would be refused
    const fixed = convertFx(calibratedQat(model, { global: INT8.global }, [yuv], { prepare: { march: 'bayes' } }), {
      march: 'bayes',
      onWarning: () => {},
    });
    const order = fixed.graph.nodes.map((n) => `${n.op}:${n.target}`);
    expect(order.slice(0, 3)).toEqual(['placeholder:yuv', 'call_function:centeredYuv2Rgb', 'call_module:quant']);
    // the float conversion runs as it does outside the model
    const direct = call(fixed.getSubmodule('quant'), centeredYuv2Rgb(yuv, 'full')) as QTensor;
    const q = fixed.getSubmodule('quant') as Quantize;
    const forward = q.forward.bind(q);
    let seen: QTensor | null = null;
    q.forward = (x: Tensor) => {
      seen = forward(x);
      return seen;
    };
    call(fixed, yuv);
    expect(Array.from(ints(seen))).toEqual(Array.from(direct.ints()));
  });
});
