import { FakeQuantize, getDefaultQconfig } from '@qtk/fake-quant';
import { QTensor } from '@qtk/fixed-point';
import type { GraphModule } from '@qtk/ir';
import '@qtk/march-bayes';
import '@qtk/march-bernoulli2';
import { Conv2d, DeQuantStub, Flatten, Linear, Module, QuantStub, ReLU } from '@qtk/nn';
import { QConfigError } from '@qtk/spec';
import { Generator, noGrad, rand, type Tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { Conv3dSoftmaxNet } from '../testing/convert-harness.js';
import {
  calibrate,
  calibrateAsync,
  calibratePostTraining,
  ConversionError,
  DEFAULT_PTQ_OBSERVER,
  convertFx,
  type PostTrainingStage,
  prepareQatFx,
  quantizePostTraining,
  quantizePostTrainingAsync,
} from '../index.js';
import { thrownBy } from '../testing/convert-harness.js';

/** conv-relu, flatten, a Linear: small enough to compare every scale. */
class SmallNet extends Module {
  readonly quant = new QuantStub({ scale: 1 / 128 });
  readonly conv: Conv2d;
  readonly relu = new ReLU();
  readonly flatten = new Flatten();
  readonly fc: Linear;
  readonly dequant = new DeQuantStub();
  constructor(seed: number) {
    super();
    const generator = new Generator(seed);
    this.conv = new Conv2d(1, 3, 3, { padding: 1, generator });
    this.fc = new Linear(3 * 4 * 4, 5, { generator });
  }
  forward(x: Tensor): Tensor {
    return this.dequant.call(this.fc.call(this.flatten.call(this.relu.call(this.conv.call(this.quant.call(x))))));
  }
}

const batches = (): Tensor[] => {
  const g = new Generator(11);
  return [0, 1, 2].map(() => rand([4, 1, 4, 4], { low: -1, high: 1, generator: g }));
};
const probe = rand([6, 1, 4, 4], { low: -1, high: 1, generator: new Generator(12) });

function outputOf(model: GraphModule): number[] {
  const y = noGrad(() => model.call(probe)) as Tensor | QTensor;
  return [...(y instanceof QTensor ? y.dequantize() : y).values()];
}

/** Every fake-quant's scale, by module path. */
function scalesOf(model: GraphModule): Record<string, number[]> {
  return Object.fromEntries(
    model
      .namedModules()
      .filter(([, m]) => m instanceof FakeQuantize)
      .map(([name, m]) => [name, [...(m as FakeQuantize).scale.values()]]),
  );
}

/** The flow the recipe replaces, written out. */
function byHand(observer: string): { calibrated: GraphModule; fixed: GraphModule } {
  const calibrated = prepareQatFx(
    new SmallNet(3).eval(),
    { global: getDefaultQconfig('fake_quant', 'fake_quant', observer, 'min_max') },
    { march: 'bayes', onWarning: () => {} },
  );
  calibrate(calibrated, batches(), { onWarning: () => {} });
  return { calibrated, fixed: convertFx(calibrated, { march: 'bayes', onWarning: () => {} }) };
}

describe('quantizePostTraining', () => {
  it('gives the scales and fixed-point outputs of prepare, calibrate and convert written by hand', () => {
    const want = byHand('mse');
    const stages: PostTrainingStage[] = [];
    const seen: number[] = [];
    const r = quantizePostTraining(new SmallNet(3).eval(), {
      march: 'bayes',
      observer: 'mse',
      calibration: batches(),
      onWarning: () => {},
      onStage: (s) => stages.push(s),
      onBatch: (i) => seen.push(i),
    });
    expect(r.batches).toBe(3);
    expect(seen).toEqual([0, 1, 2]);
    expect(stages).toEqual(['prepare', 'calibrate', 'convert']);
    const scales = scalesOf(r.calibrated);
    expect(Object.keys(scales).length).toBeGreaterThanOrEqual(4);
    expect(scales).toEqual(scalesOf(want.calibrated));
    // the input stub keeps the model's fixed scale
    expect(scales['quant.activationPostProcess']).toEqual([Math.fround(1 / 128)]);
    const out = outputOf(r.fixed);
    expect(out).toHaveLength(30);
    expect(out).toEqual(outputOf(want.fixed));
    expect(out.some((v) => v !== 0)).toBe(true);
  });

  it('calibrates with mix activations by default (DEFAULT_PTQ_OBSERVER)', () => {
    expect(DEFAULT_PTQ_OBSERVER).toBe('mix');
    const r = quantizePostTraining(new SmallNet(3).eval(), {
      march: 'bayes',
      calibration: batches(),
      onWarning: () => {},
    });
    expect(scalesOf(r.calibrated)).toEqual(scalesOf(byHand('mix').calibrated));
    expect(scalesOf(r.calibrated)).not.toEqual(scalesOf(byHand('min_max').calibrated));
  });

  it('refuses a qconfig together with an observer', () => {
    const err = thrownBy(() =>
      quantizePostTraining(new SmallNet(3).eval(), {
        march: 'bayes',
        qconfig: { global: getDefaultQconfig('fake_quant', 'fake_quant', 'mse', 'min_max') },
        observer: 'kl',
        calibration: batches(),
      }),
    );
    expect(QConfigError.isInstance(err)).toBe(true);
    expect((err as Error).message).toMatch(/both a qconfig and observer 'kl'/);
  });

  it('passes each warning to the sink with its stage and returns them all', () => {
    const got: [string, PostTrainingStage][] = [];
    const nan = [rand([2, 1, 4, 4], { generator: new Generator(1) }).mul(Number.NaN)];
    const r = calibratePostTraining(new SmallNet(3).eval(), {
      march: 'bayes',
      calibration: nan,
      onWarning: (m, stage) => got.push([m, stage]),
    });
    expect(got[0]).toEqual([
      expect.stringMatching(/^the output layer 'fc' \(Linear\) is quantized to qint8/),
      'prepare',
    ]);
    const calibration = got.slice(1);
    expect(calibration.length).toBeGreaterThan(0);
    for (const [m, stage] of calibration) {
      expect(stage).toBe('calibrate');
      expect(m).toMatch(/^calibration: fake-quant '[\w.]+' saw no finite value/);
    }
    expect(r.warnings).toEqual(got.map(([m]) => m));
  });

  it('stops before conversion in calibratePostTraining, its fake-quants in VALIDATION', () => {
    const stages: PostTrainingStage[] = [];
    let after: [GraphModule, number] | null = null;
    const r = calibratePostTraining(new SmallNet(3).eval(), {
      march: 'bayes',
      observer: 'mse',
      calibration: batches(),
      onWarning: () => {},
      onStage: (s) => stages.push(s),
      afterCalibrate: (m, n) => {
        after = [m, n];
      },
    });
    expect(stages).toEqual(['prepare', 'calibrate']);
    expect(after).toEqual([r.calibrated, 3]);
    expect(scalesOf(r.calibrated)).toEqual(scalesOf(byHand('mse').calibrated));
    const states = r.calibrated
      .namedModules()
      .filter(([, m]) => m instanceof FakeQuantize)
      .map(([, m]) => (m as FakeQuantize).fakeQuantState);
    expect(new Set(states)).toEqual(new Set(['VALIDATION']));
  });
});

describe('quantizePostTrainingAsync and calibrateAsync', () => {
  async function* arriving(): AsyncGenerator<Tensor> {
    for (const b of batches()) {
      await Promise.resolve();
      yield b;
    }
  }

  it('give what the synchronous forms give', async () => {
    const want = byHand('mse');
    const seen: number[] = [];
    const r = await quantizePostTrainingAsync(new SmallNet(3).eval(), {
      march: 'bayes',
      observer: 'mse',
      calibration: arriving(),
      onWarning: () => {},
      onBatch: (i) => seen.push(i),
    });
    expect(r.batches).toBe(3);
    expect(seen).toEqual([0, 1, 2]);
    expect(scalesOf(r.calibrated)).toEqual(scalesOf(want.calibrated));
    expect(outputOf(r.fixed)).toEqual(outputOf(want.fixed));
  });

  it('calibrateAsync stops after numBatches', async () => {
    const gm = prepareQatFx(
      new SmallNet(3).eval(),
      { global: getDefaultQconfig('fake_quant', 'fake_quant', 'min_max', 'min_max') },
      { march: 'bayes', onWarning: () => {} },
    );
    expect(await calibrateAsync(gm, arriving(), { numBatches: 2, onWarning: () => {} })).toBe(2);
    const sync = prepareQatFx(
      new SmallNet(3).eval(),
      { global: getDefaultQconfig('fake_quant', 'fake_quant', 'min_max', 'min_max') },
      { march: 'bayes', onWarning: () => {} },
    );
    expect(calibrate(sync, batches(), { numBatches: 2, onWarning: () => {} })).toBe(2);
    expect(scalesOf(gm)).toEqual(scalesOf(sync));
  });
});

describe('quantizePostTraining errors', () => {
  const volume = () => [rand([2, 1, 2, 4, 4], { generator: new Generator(3) })];

  it('refuses operators the march cannot run with a ConversionError that says to prepare with hybrid: true', () => {
    const err = thrownBy(() =>
      quantizePostTraining(new Conv3dSoftmaxNet().eval(), {
        march: 'bernoulli2',
        calibration: volume(),
        onWarning: () => {},
      }),
    );
    expect(ConversionError.isInstance(err)).toBe(true);
    const ce = err as ConversionError;
    expect(ce.failures.map((f) => f.node)).toEqual(['conv3d', 'softmax']);
    expect(ce.message).toMatch(/march 'bernoulli2' cannot convert 2 node\(s\)/);
    expect(ce.message).toContain(
      'prepareQatFx(model, qconfigDict, { march, hybrid: true, partitioner: hybridPartitioner })',
    );
  });

  it("throws what explainError makes of a stage's error, with the calibrated model once prepared", () => {
    const calls: { stage: PostTrainingStage; calibrated: GraphModule | null }[] = [];
    const err = thrownBy(() =>
      quantizePostTraining(new Conv3dSoftmaxNet().eval(), {
        march: 'bernoulli2',
        calibration: volume(),
        onWarning: () => {},
        explainError: (e, at) => {
          calls.push(at);
          return new Error(`tick "hybrid": ${(e as ConversionError).failures.length} node(s)`);
        },
      }),
    );
    expect((err as Error).message).toBe('tick "hybrid": 2 node(s)');
    expect(calls).toHaveLength(1);
    expect(calls[0]!.stage).toBe('convert');
    expect(calls[0]!.calibrated?.getSubmodule('conv3d')).toBeDefined();

    const stages: PostTrainingStage[] = [];
    const miss = thrownBy(() =>
      quantizePostTraining(new SmallNet(3).eval(), {
        march: 'no-such-march',
        calibration: batches(),
        explainError: (e, at) => {
          stages.push(at.stage);
          expect(at.calibrated).toBeNull();
          return e;
        },
      }),
    );
    expect(stages).toEqual(['prepare']);
    expect((miss as Error).message).toMatch(/no-such-march/);
  });
});
