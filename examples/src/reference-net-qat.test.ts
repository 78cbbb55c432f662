import '@qtk/march-bayes';
import { calibrate, prepareQatFx, QatModule } from '@qtk/core';
import { defaultQatOutQconfig, defaultQatQconfig, namedFakeQuants } from '@qtk/fake-quant';
import { symbolicTrace } from '@qtk/ir';
import { exportOnnxBytes, importOnnx } from '@qtk/onnx';
import { Generator, noGrad, randn, type Tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { ReferenceNet } from './reference-net.js';

function maxRelErr(got: Tensor, want: Tensor): number {
  const a = got.values();
  const e = want.values();
  let scale = 0;
  let err = 0;
  for (let i = 0; i < e.length; i++) {
    scale = Math.max(scale, Math.abs(e[i]!));
    err = Math.max(err, Math.abs(a[i]! - e[i]!));
  }
  return err / scale;
}

describe('the reference network prepared for QAT', () => {
  it('traced and ONNX-imported models prepare the same way and calibrate close to float', () => {
    const g = new Generator(8);
    const model = new ReferenceNet({ generator: g });
    for (let i = 0; i < 2; i++) model.call(randn([4, 1, 28, 28], { generator: g }));
    model.eval();
    const calib = [0, 1, 2].map(() => randn([8, 1, 28, 28], { generator: g }).clamp(-1, 1));
    const x = randn([4, 1, 28, 28], { generator: g }).clamp(-1, 1);
    const want = noGrad(() => model.call(x));

    const traced = prepareQatFx(
      model,
      { global: defaultQatQconfig, moduleName: { fc: defaultQatOutQconfig } },
      { march: 'bayes' },
    );
    const imported = prepareQatFx(
      importOnnx(exportOnnxBytes(symbolicTrace(model), [x])),
      { global: defaultQatQconfig, moduleName: { fc: defaultQatOutQconfig } },
      { march: 'bayes', inputQuantStubs: { scale: 1 / 128 } },
    );
    // 9 fused convs + fc (+ the input stub) are QAT modules in both
    const qatModules = (gm: typeof traced) =>
      gm.modules().filter((m) => m instanceof QatModule && m.weightFakeQuant).length;
    expect(qatModules(traced)).toBe(10);
    expect(qatModules(imported)).toBe(10);
    expect(namedFakeQuants(imported).length).toBe(namedFakeQuants(traced).length);

    calibrate(traced, calib);
    calibrate(imported, calib);
    const a = noGrad(() => traced.call(x)) as Tensor;
    const b = noGrad(() => imported.call(x)) as Tensor;
    expect(maxRelErr(a, want)).toBeLessThan(0.05);
    expect(maxRelErr(b, want)).toBeLessThan(0.05);
    expect(maxRelErr(b, a)).toBeLessThan(0.01);
  });
});
