import { defaultCalibOutQconfig, defaultCalibQconfig, FakeQuantize, namedFakeQuants } from '@qtk/fake-quant';
import type { GraphModule } from '@qtk/ir';
import { MSELoss, SGD } from '@qtk/nn';
import { QConfigError, type ObserverDType } from '@qtk/spec';
import type { Tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import '@qtk/march-bayes';
import {
  activationFakeQuantOf,
  calibrate,
  defaultQconfigSetter,
  fixedActivationScaleSetter,
  int16ActivationSetter,
  prepareQatFx,
} from '../index.js';
import { CompositeNet, imageBatches, ResidualSigmoidNet } from '@qtk/test-models';

const quiet = { onWarning: () => {} };
const QUANTIZED = ['quant', 'relu0', '_generated_add_0', 'conv2', 'act', 'pool'];

const scaleOf = (gm: GraphModule, name: string): number => activationFakeQuantOf(gm, name)!.scale.values()[0]!;
const scales = (gm: GraphModule) => Object.fromEntries(QUANTIZED.map((n) => [n, scaleOf(gm, n)]));
const run = (gm: GraphModule, x: Tensor): Tensor => (gm as unknown as { call(x: Tensor): Tensor }).call(x);

/** The scales an ordinary calibration (the calibration qconfigs, same batches) gives. */
function calibratedScales(batches: Tensor[], dtype: ObserverDType = 'qint8') {
  const act = defaultCalibQconfig.activation!.withArgs({ dtype });
  const calib = prepareQatFx(
    new ResidualSigmoidNet(),
    {
      global: { activation: act, weight: defaultCalibQconfig.weight },
      moduleName: { fc: defaultCalibOutQconfig },
    },
    { march: 'bayes', ...quiet },
  );
  calibrate(calib, batches, quiet);
  return scales(calib);
}

/** `steps` SGD steps towards a target 3× the model's own output: activations grow, so observing scales would move. */
function train(gm: GraphModule, x: Tensor, steps: number): void {
  gm.train();
  const target = run(gm, x).detach().mul(3);
  const opt = new SGD(gm.parameters(), { lr: 0.05 });
  const loss = new MSELoss();
  for (let i = 0; i < steps; i++) {
    const l = loss.call(run(gm, x), target);
    opt.zeroGrad();
    l.backward();
    opt.step();
  }
}

describe('fixedActivationScaleSetter', () => {
  it('fixes every activation scale to its calibrated value; QAT steps move weights, not those scales', () => {
    const batches = imageBatches(3, 4);
    const expected = calibratedScales(batches);
    const gm = prepareQatFx(new ResidualSigmoidNet(), {
      march: 'bayes',
      qconfigSetter: [defaultQconfigSetter(), fixedActivationScaleSetter({ batches })],
      ...quiet,
    });
    // real calibrated values, not the 1.0 placeholder: the input's is near max |x| / 127 (a moving average of batch ranges)
    expect(Object.values(expected).every((v) => v > 0 && v < 0.1)).toBe(true);
    const maxAbs = Math.max(...batches.map((b) => Math.max(...Array.from(b.abs().values()))));
    expect(expected.quant).toBeGreaterThan((0.9 * maxAbs) / 127);
    expect(expected.quant).toBeLessThanOrEqual((maxAbs / 127) * (1 + 1e-6));
    expect(scales(gm)).toEqual(expected);
    for (const n of QUANTIZED) {
      const fq = activationFakeQuantOf(gm, n)!;
      expect([n, fq.options.observer, fq.fakeQuantState, fq.dtype]).toEqual([n, 'fixed_scale', 'QAT', 'qint8']);
    }
    // weight fake-quants still observe; the fc stays high precision
    expect(
      namedFakeQuants(gm).filter(
        ([k, f]) => k.endsWith('weightFakeQuant') && (f as FakeQuantize).options.observer === 'min_max',
      ),
    ).toHaveLength(4);
    expect(activationFakeQuantOf(gm, 'fc')).toBeNull();

    const weightBefore = Array.from((gm.getSubmodule('conv2.module') as unknown as { weight: Tensor }).weight.values());
    train(gm, imageBatches(8, 1)[0]!, 3);
    const weightAfter = Array.from((gm.getSubmodule('conv2.module') as unknown as { weight: Tensor }).weight.values());
    expect(weightAfter).not.toEqual(weightBefore);
    expect(scales(gm)).toEqual(expected);
  });

  it('the same training moves the scales of an ordinary QAT model (the check above can fail)', () => {
    const gm = prepareQatFx(new ResidualSigmoidNet(), {
      march: 'bayes',
      qconfigSetter: [defaultQconfigSetter()],
      ...quiet,
    });
    const x = imageBatches(8, 1)[0]!;
    run(gm, x);
    const before = scales(gm);
    train(gm, x, 3);
    const after = scales(gm);
    expect(QUANTIZED.filter((n) => after[n] !== before[n]).length).toBeGreaterThan(2);
  });

  it('after int16ActivationSetter the fixed scales are the int16 calibration', () => {
    const batches = imageBatches(4, 2);
    const gm = prepareQatFx(new ResidualSigmoidNet(), {
      march: 'bayes',
      qconfigSetter: [defaultQconfigSetter(), int16ActivationSetter(), fixedActivationScaleSetter({ batches })],
      ...quiet,
    });
    const int16 = calibratedScales(batches, 'qint16');
    const int8 = calibratedScales(batches);
    expect(QUANTIZED.every((n) => int16[n]! < int8[n]! / 100)).toBe(true);
    expect(scales(gm)).toEqual(int16);
    expect(QUANTIZED.map((n) => activationFakeQuantOf(gm, n)!.quantMax)).toEqual(QUANTIZED.map(() => 32767));
  });

  it('calibrates on exampleInputs when no batches are given, and needs one or the other', () => {
    const x = imageBatches(5, 1)[0]!;
    const gm = prepareQatFx(new ResidualSigmoidNet(), {
      march: 'bayes',
      exampleInputs: x,
      qconfigSetter: [defaultQconfigSetter(), fixedActivationScaleSetter()],
      ...quiet,
    });
    expect(scales(gm)).toEqual(calibratedScales([x]));
    expect(() =>
      prepareQatFx(new ResidualSigmoidNet(), {
        march: 'bayes',
        qconfigSetter: [defaultQconfigSetter(), fixedActivationScaleSetter()],
        ...quiet,
      }),
    ).toThrow(QConfigError);
  });

  it('leaves the input model as it was (training mode, no fake-quants)', () => {
    const model = new ResidualSigmoidNet();
    model.train();
    prepareQatFx(model, {
      march: 'bayes',
      qconfigSetter: [defaultQconfigSetter(), fixedActivationScaleSetter({ batches: imageBatches(1, 1) })],
      ...quiet,
    });
    expect(model.modules().every((m) => m.training)).toBe(true);
    expect(model.modules().some((m) => m instanceof FakeQuantize)).toBe(false);
  });

  it('functional ops get fixed scales too; a composite softmax keeps observing, with a warning', () => {
    const warnings: string[] = [];
    const gm = prepareQatFx(new CompositeNet(), {
      march: 'bayes',
      qconfigSetter: [defaultQconfigSetter(), fixedActivationScaleSetter({ batches: imageBatches(2, 2) })],
      onWarning: (m) => warnings.push(m),
    });
    for (const n of ['quant', 'conv0', '_generated_add_0', '_generated_cat_0'])
      expect([n, activationFakeQuantOf(gm, n)?.options.observer]).toEqual([n, 'fixed_scale']);
    expect(activationFakeQuantOf(gm, 'softmax')?.options.observer).toBe('min_max');
    expect(warnings.filter((w) => w.startsWith('fixedActivationScaleSetter'))).toEqual([
      'fixedActivationScaleSetter: softmax keep observing their activation scales (composite QAT forms or per-channel scales, which one fixed scale cannot stand for)',
    ]);
  });
});
