// autoQconfig on MobileHybridNet at CI size: one short epoch of training, a few subset images, a layer with a
// too-small fixed activation scale. The choice must repair the output within the 10 % budget.
import '@qtk/march-bayes';
import { calibrate, convertFx, prepareQatFx, type QatModule, type QConfigDict } from '@qtk/core';
import { defaultQatOutQconfig, getDefaultQconfig, qconfig, withArgs } from '@qtk/fake-quant';
import { autoQconfig, outputScorer } from '@qtk/profiler';
import { Generator } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { takeBatch } from './batches.js';
import { loadDataset, SUBSET_DIR } from './data.js';
import { MobileHybridNet } from './mobile-hybrid-net.js';
import { firstBatches } from './ptq.js';
import { trainFloat } from './train.js';

describe('autoQconfig on MobileHybridNet (bayes)', () => {
  it('raises the saturating layer to int16 first, stays within 10 % of the nodes, and recovers most of the loss', () => {
    const train = loadDataset(SUBSET_DIR, 'train', 1024);
    const float = new MobileHybridNet({ generator: new Generator(3) });
    trainFloat(float, train, { epochs: 1, lr: 0.05, seed: 0 }); // outputs that depend on the input
    float.eval();
    const calib = firstBatches(train, 64);
    const evalSet = { inputs: [takeBatch(train, null, 64, 128).images] };
    const act = getDefaultQconfig('fake_quant', 'fake_quant', 'min_max', 'min_max');
    const probe = prepareQatFx(float, { global: act }, { march: 'bayes', onWarning: () => {} });
    calibrate(probe, calib, { onWarning: () => {} });
    const calibrated = (probe.getSubmodule('block2.project.1') as QatModule).activationPostProcess!.scale.values()[0]!;
    const baseline: QConfigDict = {
      global: act,
      moduleName: {
        fc: defaultQatOutQconfig,
        'block2.project.1': qconfig(
          withArgs({ observer: 'fixed_scale', scale: calibrated / 8, dtype: 'qint8' }),
          act.weight,
        ),
      },
    };
    const r = autoQconfig(float, { march: 'bayes', calib, eval: evalSet, qconfigDict: baseline, budget: 2 });
    expect(r.quantizableNodes).toBe(29);
    expect(r.chosen.length).toBeGreaterThanOrEqual(1);
    expect(r.chosen.length).toBeLessThanOrEqual(Math.floor(0.1 * r.quantizableNodes));
    expect(r.chosen[0]!.name).toBe('block2.project.1');
    const { float: f, int8, measured } = r.scores;
    expect(1 - int8!).toBeGreaterThan(1e-3); // the broken layer costs something measurable
    expect(measured! - int8!).toBeGreaterThan(0.5 * (f! - int8!));

    // what the user does with the result: prepare, calibrate, convert; the fixed-point output improves too
    const fixedOf = (dict: QConfigDict) => {
      const p = prepareQatFx(float, dict, { march: 'bayes', onWarning: () => {} });
      calibrate(p, calib, { onWarning: () => {} });
      return convertFx(p, { march: 'bayes', onWarning: () => {} });
    };
    const cosine = outputScorer(float, evalSet, 'cosine');
    const before = cosine.score(fixedOf(baseline))!;
    const after = cosine.score(fixedOf(r.qconfigDict))!;
    expect(after - before).toBeGreaterThan(0.5 * (1 - before));
  });
});
