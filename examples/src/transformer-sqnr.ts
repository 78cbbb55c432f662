// SQNR of the bayes fixed-point model against float for the transformer encoders, on seeded
// calibration and test data. `node --conditions=qtk-source --import tsx examples/src/transformer-sqnr.ts DIR`
// also writes each model's weights and data as JSON for scripts/transformer-sqnr/fx_sqnr.py, which
// measures PyTorch FX's int8 PTQ on the same weights and samples (docs/benchmark.md, "Transformers on bayes").
import '@qtk/march-bayes';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { calibrate, convertFx, prepareQatFx } from '@qtk/core';
import { defaultQatQconfig, setFakeQuantize } from '@qtk/fake-quant';
import type { GraphModule } from '@qtk/ir';
import { type Module, sqnrDb } from '@qtk/nn';
import { Generator, noGrad, randn, type Tensor } from '@qtk/tensor';
import { TinyBert, TinyConvNext, TinyVit } from './transformer-encoders.js';

export interface EncoderCase {
  readonly name: 'vit' | 'bert' | 'convnext';
  readonly model: Module;
  readonly calibration: Tensor[];
  readonly test: Tensor;
}

/** The encoders with 8 calibration batches of 4 and a test batch of 4, standard normal, seeded. */
export function encoderCases(): EncoderCase[] {
  const data = (shape: number[], seed: number) => {
    const generator = new Generator(seed);
    const calibration = Array.from({ length: 8 }, () => randn(shape, { generator }));
    return { calibration, test: randn(shape, { generator }) };
  };
  return [
    { name: 'vit', model: new TinyVit(1, 4), ...data([4, 3, 16, 16], 11) },
    { name: 'bert', model: new TinyBert(2), ...data([4, 16, 32], 12) },
    { name: 'convnext', model: new TinyConvNext(3), ...data([4, 3, 32, 32], 13) },
  ];
}

const run = (m: Module, x: Tensor): Tensor => noGrad(() => (m as unknown as { call(x: Tensor): Tensor }).call(x));

/** prepare (default int8 qconfig) → calibrate → convert for bayes; the float output and both quantized ones. */
export function quantizeCase(c: EncoderCase): {
  fixed: GraphModule;
  float: Tensor;
  fakeQuant: Tensor;
  fixedOut: Tensor;
} {
  c.model.eval();
  const float = run(c.model, c.test);
  const qat = prepareQatFx(c.model, { global: defaultQatQconfig }, { march: 'bayes', onWarning: () => {} });
  calibrate(qat, c.calibration);
  setFakeQuantize(qat, 'VALIDATION');
  const fixed = convertFx(qat, { onWarning: () => {} });
  return { fixed, float, fakeQuant: run(qat, c.test), fixedOut: run(fixed, c.test) };
}

const asJson = (t: Tensor) => ({ shape: t.shape, data: Array.from(t.values()) });

if (process.argv[1]?.endsWith('transformer-sqnr.ts')) {
  const dir = process.argv[2];
  for (const c of encoderCases()) {
    const r = quantizeCase(c);
    console.log(`${c.name}: fixed-point SQNR ${sqnrDb(r.float.values(), r.fixedOut.values()).toFixed(2)} dB`);
    if (!dir) continue;
    const weights = Object.fromEntries(Object.entries(c.model.stateDict().tensors).map(([k, t]) => [k, asJson(t)]));
    const file = { weights, calibration: c.calibration.map(asJson), test: asJson(c.test), float: asJson(r.float) };
    writeFileSync(join(dir, `${c.name}.json`), JSON.stringify(file));
  }
}
