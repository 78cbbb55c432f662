// Calibration in onnxruntime-node against QTK's own forward, observer by observer: the scales agree within the
// runtime's float rounding, the saturation counts of fixed scales exactly, and a model the export cannot expose
// falls back to QTK with the reason.
import '../index.js';
import '@qtk/march-bayes';
import { calibrateAsync, prepareQatFx, type QatModule } from '@qtk/core';
import { FakeQuantize, getDefaultQconfig } from '@qtk/fake-quant';
import type { GraphModule } from '@qtk/ir';
import { Conv2d, DeQuantStub, Linear, Module, PixelUnshuffle, QuantStub, ReLU, Softmax } from '@qtk/nn';
import { imageBatches, LayerNormSoftmax, ResidualSigmoidNet, ShortcutResNet } from '@qtk/test-models';
import { Generator, randn, Tensor } from '@qtk/tensor';
import * as ort from 'onnxruntime-node';
// the build of onnxruntime-web Node loads: the wasm backend browsers run
import * as ortWeb from 'onnxruntime-web';
import { describe, expect, it } from 'vitest';
import type { OnnxRuntimeApi, RuntimeSession, RuntimeSessionOptions } from '@qtk/onnx';
import { runtimeCalibration } from './runtime-calibration.js';

const runtime = ort;
/** Measured: at most 2.4e-7 (two float32 steps; onnxruntime sums convolutions in another order). */
const SCALE_TOLERANCE = 1e-6;

/** A QuantStub with a fixed scale (what a fixed scale clamps is counted), then conv → relu. */
class FixedInputNet extends Module {
  readonly quant = new QuantStub({ scale: 1 / 128 });
  readonly conv = new Conv2d(3, 4, 3, { generator: new Generator(4) });
  readonly relu = new ReLU();
  readonly dequant = new DeQuantStub();
  forward(x: Tensor): Tensor {
    return this.dequant.call(this.relu.call(this.conv.call(this.quant.call(x))));
  }
}

/** A pixel unshuffle, which has no ONNX form, between two convs. */
class UnshuffleNet extends Module {
  readonly quant = new QuantStub();
  readonly conv = new Conv2d(3, 4, 3, { padding: 1, generator: new Generator(5) });
  readonly unshuffle = new PixelUnshuffle(2);
  readonly dequant = new DeQuantStub();
  forward(x: Tensor): Tensor {
    return this.dequant.call(this.unshuffle.call(this.conv.call(this.quant.call(x))));
  }
}

/** Linear over [N, 4, 6], its rows folded in pairs into the batch dim ([2N, 2, 6]) for a softmax, then unfolded. */
class FoldNet extends Module {
  readonly quant = new QuantStub();
  readonly fc = new Linear(6, 6, { generator: new Generator(6) });
  readonly soft = new Softmax({ dim: -1 });
  readonly dequant = new DeQuantStub();
  forward(x: Tensor): Tensor {
    const folded = this.fc.call(this.quant.call(x)).reshape([-1, 2, 6]);
    return this.dequant.call(this.soft.call(folded).reshape([-1, 4, 6]));
  }
}

function prepared(model: Module, observer: string): GraphModule {
  return prepareQatFx(
    model,
    { global: getDefaultQconfig('fake_quant', 'fake_quant', observer, 'min_max') },
    {
      march: 'bayes',
      onWarning: () => {},
    },
  );
}

function scales(gm: GraphModule): Map<string, number[]> {
  return new Map(
    gm
      .namedModules()
      .filter((e): e is [string, FakeQuantize] => e[1] instanceof FakeQuantize)
      .map(([name, fq]) => [name, Array.from(fq.scale.values())]),
  );
}

/** onnxruntime-node with every batch's fetch list recorded (null: the run fetched every output), and releases. */
function recordingRuntime(fetched: (readonly string[] | null)[], released: string[] = []): OnnxRuntimeApi {
  return {
    Tensor: ort.Tensor,
    InferenceSession: {
      async create(model, options) {
        const session = await ort.InferenceSession.create(model, options);
        return {
          inputNames: session.inputNames,
          outputNames: session.outputNames,
          run: ((feeds: Record<string, ort.Tensor>, fetches?: readonly string[]) => {
            fetched.push(fetches ?? null);
            return fetches ? session.run(feeds, fetches) : session.run(feeds);
          }) as RuntimeSession['run'],
          release: () => {
            released.push('session');
            return session.release();
          },
        };
      },
    },
  };
}

async function calibrateBoth(
  make: () => Module,
  observer: string,
  batches: Tensor[],
  api: OnnxRuntimeApi = runtime,
  sessionOptions?: RuntimeSessionOptions,
): Promise<{ qtk: GraphModule; ort: GraphModule; fallbacks: string[]; values: number }> {
  const qtk = prepared(make(), observer);
  await calibrateAsync(qtk, batches, { onWarning: () => {} });
  const viaOrt = prepared(make(), observer);
  const fallbacks: string[] = [];
  let values = 0;
  const engine = runtimeCalibration(api, {
    ...(sessionOptions ? { sessionOptions } : {}),
    onFallback: (r) => fallbacks.push(r),
    onReady: (i) => {
      values = i.values;
    },
  });
  await calibrateAsync(viaOrt, batches, { onWarning: () => {}, runBatch: engine(viaOrt) });
  return { qtk, ort: viaOrt, fallbacks, values };
}

/** The largest relative difference between two models' scales, over every fake-quant. */
function largestScaleDifference(a: GraphModule, b: GraphModule): number {
  const sb = scales(b);
  let worst = 0;
  for (const [name, s] of scales(a)) {
    const t = sb.get(name)!;
    s.forEach((v, i) => {
      worst = Math.max(worst, Math.abs(v - t[i]!) / Math.abs(v));
    });
  }
  return worst;
}

describe('runtimeCalibration', () => {
  const batches = imageBatches(11, 4, 8);

  it.each(['min_max', 'moving_average_min_max', 'percentile', 'mse', 'kl', 'mix'])(
    'gives the scales of QTK calibration with the %s observer',
    async (observer) => {
      const {
        qtk,
        ort: viaOrt,
        fallbacks,
        values,
      } = await calibrateBoth(() => new ResidualSigmoidNet(3), observer, batches);
      expect(fallbacks).toEqual([]);
      expect(values).toBeGreaterThanOrEqual(6);
      expect([...scales(viaOrt).keys()]).toEqual([...scales(qtk).keys()]);
      expect(largestScaleDifference(qtk, viaOrt)).toBeLessThanOrEqual(SCALE_TOLERANCE);
    },
  );

  it('runs in onnxruntime-web too (at the optimization level it can return intermediate values at)', async () => {
    ortWeb.env.wasm.numThreads = 1;
    for (const observer of ['min_max', 'mse']) {
      const {
        qtk,
        ort: viaWeb,
        fallbacks,
      } = await calibrateBoth(() => new ResidualSigmoidNet(3), observer, batches, ortWeb);
      expect(fallbacks).toEqual([]);
      expect(largestScaleDifference(qtk, viaWeb)).toBeLessThanOrEqual(SCALE_TOLERANCE);
    }
    // a strided shortcut conv's value, which its default level ('all') rewrites, cannot be handed back there: QTK
    // calibrates, saying why
    const images = [0, 1].map((i) => randn([4, 1, 28, 28], { generator: new Generator(20 + i) }).clamp(-1, 1));
    const shortcut = () => new ShortcutResNet(7, [16, 32, 64]).eval();
    const atAll = await calibrateBoth(shortcut, 'mse', images, ortWeb, { graphOptimizationLevel: 'all' });
    expect(atAll.fallbacks).toEqual([expect.stringContaining('non-tensor typed value')]);
    const byDefault = await calibrateBoth(shortcut, 'mse', images, ortWeb);
    expect(byDefault.fallbacks).toEqual([]);
    expect(largestScaleDifference(byDefault.qtk, byDefault.ort)).toBeLessThanOrEqual(SCALE_TOLERANCE);
  });

  it('reduces values a min-max observer takes to their range in the runtime; other observers get them whole', async () => {
    for (const [observer, whole] of [
      ['min_max', false],
      ['percentile', true],
    ] as const) {
      const fetched: (readonly string[] | null)[] = [];
      const {
        qtk,
        ort: viaOrt,
        fallbacks,
      } = await calibrateBoth(() => new ResidualSigmoidNet(3), observer, batches, recordingRuntime(fetched));
      expect(fallbacks).toEqual([]);
      // the check fetches everything (on its two samples and on one), then one run per batch
      expect(fetched.map((f) => f === null)).toEqual([true, true, false, false, false, false]);
      const names = fetched.slice(2).flatMap((f) => f!);
      expect(names.some((n) => !n.includes('__qtk_'))).toBe(whole);
      expect(names.some((n) => n.endsWith('__qtk_min'))).toBe(!whole);
      expect(largestScaleDifference(qtk, viaOrt)).toBeLessThanOrEqual(SCALE_TOLERANCE);
    }
  });

  it('releases the runtime session when calibration ends', async () => {
    const released: string[] = [];
    const { fallbacks } = await calibrateBoth(
      () => new ResidualSigmoidNet(3),
      'min_max',
      batches,
      recordingRuntime([], released),
    );
    expect(fallbacks).toEqual([]);
    expect(released).toEqual(['session']);
  });

  it("sends a batch whose values hold NaN, and the rest, to QTK (the runtime's min and max do not leave NaN out)", async () => {
    const withNan = batches.map((b, i) => {
      if (i !== 2) return b;
      const v = Float32Array.from(b.values() as Float32Array);
      v[5] = Number.NaN;
      return new Tensor({ data: v, shape: b.shape, dtype: 'float32' });
    });
    const { qtk, ort: viaOrt, fallbacks } = await calibrateBoth(() => new ResidualSigmoidNet(3), 'min_max', withNan);
    expect(fallbacks).toHaveLength(1);
    expect(fallbacks[0]).toMatch(/holds NaN .* on this batch/);
    expect(largestScaleDifference(qtk, viaOrt)).toBeLessThanOrEqual(SCALE_TOLERANCE);
  });

  it('counts what a fixed input scale clamps exactly as QTK does (the export samples are not observed)', async () => {
    const wide = batches.map((b) => b.mul(3));
    const { qtk, ort: viaOrt, fallbacks } = await calibrateBoth(() => new FixedInputNet(), 'min_max', wide);
    expect(fallbacks).toEqual([]);
    const saturation = (gm: GraphModule) => (gm.getSubmodule('quant') as QatModule).activationPostProcess!.saturation;
    expect(saturation(qtk)!.clamped).toBeGreaterThan(0);
    expect(saturation(viaOrt)).toEqual(saturation(qtk));
    expect(largestScaleDifference(qtk, viaOrt)).toBeLessThanOrEqual(SCALE_TOLERANCE);
  });

  it("runs a composite module's own steps in QTK on its arguments from the runtime (bayes layer norm, softmax)", async () => {
    const x = [0, 1, 2].map((seed) => randn([4, 3, 6], { generator: new Generator(seed) }));
    const { qtk, ort: viaOrt, fallbacks } = await calibrateBoth(() => new LayerNormSoftmax(), 'min_max', x);
    expect(fallbacks).toEqual([]);
    const steps = [...scales(viaOrt).keys()].filter(
      (n) => n.startsWith('norm.module.') || n.startsWith('soft.module.'),
    );
    expect(steps.length).toBeGreaterThanOrEqual(4);
    expect(largestScaleDifference(qtk, viaOrt)).toBeLessThanOrEqual(SCALE_TOLERANCE);
  });

  it('follows a batch folded into another dim (the export keeps the -1 of a reshape)', async () => {
    const x = [0, 1, 2].map((seed) => randn([5, 4, 6], { generator: new Generator(seed) }));
    const { qtk, ort: viaOrt, fallbacks } = await calibrateBoth(() => new FoldNet(), 'min_max', x);
    expect(fallbacks).toEqual([]);
    expect(largestScaleDifference(qtk, viaOrt)).toBeLessThanOrEqual(SCALE_TOLERANCE);
  });

  it('falls back to QTK, saying why, for a model the export cannot write', async () => {
    const { qtk, ort: viaOrt, fallbacks } = await calibrateBoth(() => new UnshuffleNet(), 'min_max', batches);
    expect(fallbacks).toHaveLength(1);
    expect(fallbacks[0]).toMatch(/the model cannot be exported to ONNX: .*PixelUnshuffle\) has no ONNX form/);
    expect(largestScaleDifference(qtk, viaOrt)).toBe(0);
  });
});
