// convertFx refuses a model whose fake-quants never saw data (placeholder scales), naming them.
import { defaultQatQconfig, setFakeQuantize } from '@qtk/fake-quant';
import '@qtk/march-bayes';
import { Conv2d, DeQuantStub, Module, QuantStub, ReLU } from '@qtk/nn';
import { Generator, noGrad, rand, type Tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import {
  calibrate,
  ConversionError,
  convertFx,
  modelFromBytes,
  modelToBytes,
  prepareQatFx,
  startQat,
} from './index.js';
import { uncalibratedFakeQuants } from './calibration.js';
import { callModel, thrownBy } from './testing/convert-harness.js';

class Net extends Module {
  readonly quant: QuantStub;
  readonly conv = new Conv2d(1, 4, 3, { padding: 1, generator: new Generator(3) });
  readonly relu = new ReLU();
  readonly dequant = new DeQuantStub();
  constructor(inputScale?: number) {
    super();
    this.quant = new QuantStub(inputScale !== undefined ? { scale: inputScale } : {});
  }
  forward(x: Tensor): Tensor {
    return this.dequant.call(this.relu.call(this.conv.call(this.quant.call(x))));
  }
}

const batch = (seed: number): Tensor =>
  rand([2, 1, 5, 5], { generator: new Generator(seed) })
    .mul(2)
    .sub(1);
const quiet = { onWarning: () => {} };
const prepare = (inputScale?: number) =>
  prepareQatFx(new Net(inputScale).eval(), { global: defaultQatQconfig }, { march: 'bayes', ...quiet });

describe('convertFx of a model that never saw data', () => {
  it('is a ConversionError naming every fake-quant without data and saying to calibrate first', () => {
    const qat = prepare();
    const err = thrownBy(() => convertFx(qat, quiet));
    expect(err).toBeInstanceOf(ConversionError);
    const e = err as ConversionError;
    expect(e.uncalibrated).toEqual(uncalibratedFakeQuants(qat));
    expect(e.uncalibrated).toEqual([
      'quant.activationPostProcess',
      'relu.weightFakeQuant',
      'relu.activationPostProcess',
    ]);
    expect(e.message).toContain(
      "cannot convert for march 'bayes': 3 fake-quant(s) never saw data, so their scales are the placeholder 1.0:\n  - quant.activationPostProcess\n",
    );
    expect(e.message).toContain('run calibrate(model, batches) (or QAT training) on the prepared model first');
  });

  it('a fixed-scale input stub counts as calibrated; the other fake-quants are still named', () => {
    const qat = prepare(1 / 128);
    const e = thrownBy(() => convertFx(qat, quiet)) as ConversionError;
    expect(e.uncalibrated).toEqual(['relu.weightFakeQuant', 'relu.activationPostProcess']);
  });

  it('converts once calibrated, and once QAT training has run a step', () => {
    const calibrated = prepare(1 / 128);
    calibrate(calibrated, [batch(1)], quiet);
    expect(uncalibratedFakeQuants(calibrated)).toEqual([]);
    expect(() => convertFx(calibrated, quiet)).not.toThrow();

    const trained = prepare(1 / 128);
    startQat(trained);
    callModel(trained, batch(2));
    expect(() => convertFx(trained, quiet)).not.toThrow();
  });

  it('a calibrated model saved to a model file and loaded again converts to the same integers', () => {
    const qat = prepare();
    calibrate(qat, [batch(1), batch(2)], quiet);
    setFakeQuantize(qat, 'VALIDATION');
    const loaded = modelFromBytes(modelToBytes(qat)).model;
    expect(uncalibratedFakeQuants(loaded)).toEqual([]);
    const x = batch(3);
    const direct = noGrad(() => callModel(convertFx(qat, quiet), x)).values();
    const fromFile = noGrad(() => callModel(convertFx(loaded, quiet), x)).values();
    expect(Array.from(fromFile)).toEqual(Array.from(direct));
  });

  it('a module the forward never calls needs no data', () => {
    class WithSpare extends Net {
      readonly spare = new Conv2d(4, 4, 1, { generator: new Generator(4) });
    }
    const qat = prepareQatFx(
      new WithSpare(1 / 128).eval(),
      { global: defaultQatQconfig },
      { march: 'bayes', ...quiet },
    );
    calibrate(qat, [batch(1)], quiet);
    expect(() => convertFx(qat, quiet)).not.toThrow();
  });
});
