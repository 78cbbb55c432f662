// Calibrates a MobileNetV3-style net (hardswish, sigmoid squeeze-excite, tanh) with each activation
// observer and compares fake-quant accuracy with float; --layers prints every activation's threshold
// per observer, --swap measures how much each layer's threshold costs (one layer at a time).
//   node --conditions=qtk-source --import tsx examples/src/observer-comparison.ts [--layers] [--swap kl:mix]
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { calibrate, prepareQatFx, setMarch } from '@qtk/core';
import '@qtk/march-bayes';
import { defaultQatOutQconfig, getDefaultQconfig, namedFakeQuants, type FakeQuantize } from '@qtk/fake-quant';
import { batchesOf, type Module } from '@qtk/nn';
import { loadStateDictFileSync, saveStateDictSync } from '@qtk/nn/node';
import { Generator } from '@qtk/tensor';
import { SUBSET_DIR, loadDataset } from './data.js';
import { MobileSeNet } from './mobile-se-net.js';
import { evaluate, trainFloat } from './train.js';
import { scriptArgs } from './script-args.js';

const HELP = `Usage: observer-comparison.ts [--data DIR] [--test-data DIR] [--epochs N] [--lr X] [--seed N] [--weights FILE] [--retrain]
  [--observers a,b,...] [--options JSON] [--calib N] [--layers] [--swap FROM:TO] [--json FILE]

  --data DIR      Fashion-MNIST folder (default: the subset in the repository, 4,000 train / 2,000 test)
  --test-data DIR evaluate on this folder's test split instead (e.g. /usr/share/datasets/fashion-mnist, 10,000)
  --epochs N      float training epochs when no weights are cached (default 20, about 2.5 minutes)
  --lr X          float training learning rate, cosine-decayed (default 0.05)
  --seed N        initialisation and shuffling seed (default 0)
  --weights FILE  float weights, trained and saved there when missing (default out/mobile-se-net-float-seed<N>.qtk)
  --observers     activation observers to compare (default min_max,percentile,mse,mix,kl)
  --options JSON  extra observer options per observer, e.g. '{"kl":{"separateAtoms":false}}'
  --calib N       calibration images, batches of 64 from the start of the training set (default 1024)
  --layers        print each activation fake-quant's threshold (scale · (qmax - qmin) / 2) per observer
  --swap F:T      start from observer F's model and give one layer at a time observer T's scale:
                  the accuracy change per layer says which thresholds cost accuracy
  --json FILE     write the figures as JSON
`;

const values = scriptArgs(HELP, {
  'test-data': { type: 'string' },
  epochs: { type: 'string', default: '20' },
  lr: { type: 'string', default: '0.05' },
  seed: { type: 'string', default: '0' },
  weights: { type: 'string' },
  retrain: { type: 'boolean' },
  observers: { type: 'string', default: 'min_max,percentile,mse,mix,kl' },
  options: { type: 'string', default: '{}' },
  calib: { type: 'string', default: '1024' },
  layers: { type: 'boolean' },
  swap: { type: 'string' },
  json: { type: 'string' },
});

const dir = values.data ?? SUBSET_DIR;
const train = loadDataset(dir, 'train');
const test = loadDataset(values['test-data'] ?? dir, 'test');
const pct = (a: number) => `${(a * 100).toFixed(2)} %`;

const weights = values.weights ?? `out/mobile-se-net-float-seed${values.seed}.qtk`;
const float = new MobileSeNet({ generator: new Generator(Number(values.seed)) });
if (existsSync(weights) && !values.retrain) {
  float.loadStateDict(loadStateDictFileSync(weights));
} else {
  const epochs = Number(values.epochs);
  console.log(`training float: ${train.images.shape[0]} images, ${epochs} epochs`);
  const { finalLoss } = trainFloat(float, train, {
    epochs,
    lr: Number(values.lr),
    seed: Number(values.seed),
    onEpoch: (e, l) => console.log(`  epoch ${e + 1}: loss ${l.toFixed(4)}`),
  });
  if (!Number.isFinite(finalLoss)) {
    console.error(`error: float training diverged (loss ${finalLoss}); try a smaller --lr`);
    process.exit(1);
  }
  mkdirSync(dirname(weights), { recursive: true });
  saveStateDictSync(float.stateDict(), weights);
}
float.eval();
const floatAcc = evaluate(float, test);
console.log(`float: ${pct(floatAcc)} on ${test.labels.size} test images`);

const batches = [...batchesOf(train.images, 64, Number(values.calib))];
const extra = JSON.parse(values.options) as Record<string, Record<string, unknown>>;

setMarch('bayes');
function calibrated(observer: string): Module {
  const qconfig = getDefaultQconfig('fake_quant', 'fake_quant', observer, 'min_max', {
    observerOptions: extra[observer] ?? {},
  });
  const model = prepareQatFx(
    float,
    { global: qconfig, moduleName: { fc: defaultQatOutQconfig } },
    { onWarning: () => {} },
  );
  calibrate(model, batches);
  return model;
}

/** Activation fake-quants (per tensor) by name. */
function activationFakeQuants(model: Module): Map<string, FakeQuantize> {
  const out = new Map<string, FakeQuantize>();
  for (const [name, fq] of namedFakeQuants(model)) {
    const f = fq as unknown as FakeQuantize;
    if (f.options.chAxis === -1 && !name.endsWith('weight_fake_quant')) out.set(name, f);
  }
  return out;
}

/** The clipping threshold a per-tensor symmetric fake-quant's scale stands for. */
function thresholdOf(fq: FakeQuantize): number {
  return (fq.scale.values()[0]! * (fq.quantMax - fq.quantMin)) / 2;
}

const observers = values.observers.split(',');
const models = new Map<string, Module>();
const accuracy: Record<string, number> = {};
for (const obs of observers) {
  const t0 = performance.now();
  const model = calibrated(obs);
  const seconds = (performance.now() - t0) / 1000;
  models.set(obs, model);
  accuracy[obs] = evaluate(model, test);
  const d = (accuracy[obs]! - floatAcc) * 100;
  console.log(
    `${obs.padEnd(10)} ${pct(accuracy[obs]!)}  (${d >= 0 ? '+' : ''}${d.toFixed(2)} vs float, calibration ${seconds.toFixed(1)} s)`,
  );
}

const thresholds: Record<string, Record<string, number>> = {};
if (values.layers) {
  const names = [...activationFakeQuants(models.get(observers[0]!)!).keys()];
  console.log(
    `\nthreshold (scale · (qmax - qmin) / 2) per activation fake-quant; absmax = largest |x| in the histograms`,
  );
  console.log(`${'fake-quant'.padEnd(44)} ${'absmax'.padStart(8)} ${observers.map((o) => o.padStart(10)).join(' ')}`);
  for (const name of names) {
    const row: Record<string, number> = {};
    let absMax = NaN;
    for (const obs of observers) {
      const fq = activationFakeQuants(models.get(obs)!).get(name)!;
      row[obs] = thresholdOf(fq);
      const h = (fq.observer as { histogram?: () => { absMax: number } }).histogram?.();
      if (h && h.absMax > 0) absMax = Number.isNaN(absMax) ? h.absMax : Math.max(absMax, h.absMax);
    }
    thresholds[name] = row;
    console.log(
      `${name.padEnd(44)} ${absMax.toPrecision(4).padStart(8)} ${observers.map((o) => row[o]!.toPrecision(4).padStart(10)).join(' ')}`,
    );
  }
}

const swaps: Record<string, number> = {};
if (values.swap) {
  const [from, to] = values.swap.split(':') as [string, string];
  const base = models.get(from) ?? calibrated(from);
  const other = activationFakeQuants(models.get(to) ?? calibrated(to));
  const baseAcc = evaluate(base, test);
  console.log(`\n${from} model (${pct(baseAcc)}) with one layer at a time given ${to}'s scale:`);
  for (const [name, fq] of activationFakeQuants(base)) {
    const s = fq.scale.values() as Float32Array;
    const kept = s[0]!;
    const theirs = other.get(name)!.scale.values()[0]!;
    const half = (fq.quantMax - fq.quantMin) / 2;
    if (theirs === kept) continue;
    s[0] = theirs;
    const acc = evaluate(base, test);
    s[0] = kept;
    swaps[name] = acc - baseAcc;
    console.log(
      `${name.padEnd(44)} ${(kept * half).toPrecision(4).padStart(8)} -> ${(theirs * half).toPrecision(4).padStart(8)}: ${((acc - baseAcc) * 100 >= 0 ? '+' : '') + ((acc - baseAcc) * 100).toFixed(2)} points`,
    );
  }
}

if (values.json) {
  writeFileSync(
    values.json,
    `${JSON.stringify({ float: floatAcc, accuracy, thresholds, swaps, swap: values.swap ?? null }, null, 2)}\n`,
  );
}
