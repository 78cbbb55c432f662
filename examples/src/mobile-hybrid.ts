// Trains (or loads) the MobileNet-style MobileHybridNet on Fashion-MNIST, then quantizes it after
// training twice: to bayes with every op on the BPU, and to bernoulli2 in hybrid mode, where the ops
// bernoulli2's capability table lacks (hardswish, the global average pool) stay float on the CPU.
// Prints the float, bayes and bernoulli2-hybrid test accuracies and the CPU nodes; writes a JSON summary.
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { checkDeployDevice, formatDeployDevice, hybridPartitioner } from '@qtk/hybrid';
import '@qtk/march-bayes';
import '@qtk/march-bernoulli2';
import { agreement } from '@qtk/nn';
import { loadStateDictFileSync, saveStateDictSync } from '@qtk/nn/node';
import { Generator, wasmStatus } from '@qtk/tensor';
import { dataDirOf, loadDataset } from './data.js';
import { MobileHybridNet } from './mobile-hybrid-net.js';
import { firstBatches, postTrainingQuantize } from './ptq.js';
import { accuracyOf, predict, trainFloat } from './train.js';
import { scriptArgs } from './script-args.js';

const HELP = `Usage: pnpm mobile-hybrid [--data DIR] [--weights FILE] [--retrain] [--epochs N] [--lr X] [--limit N]
  [--calib N] [--observer NAME] [--seed N] [--json FILE]

Float training, then PTQ of the MobileNet-style MobileHybridNet to bayes (all on the BPU) and to
bernoulli2 in hybrid mode (hardswish and the global average pools on the CPU), on Fashion-MNIST.
  --data DIR      folder with the four Fashion-MNIST IDX .gz files (default: the subset in the repository;
                  --data debian uses /usr/share/datasets/fashion-mnist)
  --weights FILE  float state dict: loaded when it exists, else trained here and saved there
                  (default out/mobile-hybrid-net-float-full.qtk with --data, -subset.qtk without)
  --retrain       train even when --weights exists (and overwrite it)
  --epochs N      float training epochs (default 4 with --data, 3 on the subset)
  --lr X          initial learning rate, cosine-decayed per step (default 0.05)
  --limit N       train on the first N training images only
  --calib N       calibration images, the first ones of the training set, batches of 64 (default 1024)
  --observer NAME activation observer of calibration (default mse, the demo's)
  --seed N        initialisation and shuffling seed (default 0)
  --json FILE     where to write the summary (default out/mobile-hybrid.json)
`;

const values = scriptArgs(HELP, {
  weights: { type: 'string' },
  retrain: { type: 'boolean' },
  epochs: { type: 'string' },
  lr: { type: 'string', default: '0.05' },
  limit: { type: 'string' },
  calib: { type: 'string', default: '1024' },
  observer: { type: 'string', default: 'mse' },
  seed: { type: 'string', default: '0' },
  json: { type: 'string', default: 'out/mobile-hybrid.json' },
});

const { dir, full } = dataDirOf(values.data);
const seed = Number(values.seed);
const weights = values.weights ?? `out/mobile-hybrid-net-float-${full ? 'full' : 'subset'}.qtk`;
const train = loadDataset(dir, 'train', values.limit ? Number(values.limit) : undefined);
const test = loadDataset(dir, 'test');
const pct = (a: number) => `${(a * 100).toFixed(2)} %`;
const seconds = (t0: number) => (performance.now() - t0) / 1000;
console.log(`data: ${dir} (${train.labels.size} train, ${test.labels.size} test images)`);
console.log(`gemm backend: ${wasmStatus().loaded ? 'wasm SIMD' : `cpu (${wasmStatus().reason})`}`);

const float = new MobileHybridNet({ generator: new Generator(seed) });
let training: { epochs: number; secondsPerEpoch: number; finalLoss: number } | null = null;
if (existsSync(weights) && !values.retrain) {
  float.loadStateDict(loadStateDictFileSync(weights));
  console.log(`float: weights from ${weights}`);
} else {
  const epochs = Number(values.epochs ?? (full ? 4 : 3));
  const t0 = performance.now();
  const r = trainFloat(float, train, {
    epochs,
    lr: Number(values.lr),
    seed,
    progress: true,
    onEpoch: (e, loss) =>
      console.log(`epoch ${e + 1}/${epochs}: mean loss ${loss.toFixed(4)} (${seconds(t0).toFixed(0)} s)`),
  });
  if (!Number.isFinite(r.finalLoss)) {
    console.error(`error: float training diverged (loss ${r.finalLoss}); try a smaller --lr`);
    process.exit(1);
  }
  training = { epochs, secondsPerEpoch: seconds(t0) / epochs, finalLoss: r.finalLoss };
  console.log(`float: trained ${epochs} epochs, ${training.secondsPerEpoch.toFixed(1)} s per epoch`);
  mkdirSync(dirname(weights), { recursive: true });
  saveStateDictSync(float.stateDict(), weights);
  console.log(`saved ${weights}`);
}
float.eval();
const floatAcc = accuracyOf(predict(float, test, { progress: true, label: 'float eval' }), test);
console.log(`float: test accuracy ${pct(floatAcc)}`);

const calibration = firstBatches(train, Number(values.calib));
const ptq = { observer: values.observer, calibration };

let t0 = performance.now();
const bayes = postTrainingQuantize(float, { ...ptq, march: 'bayes' });
const bayesFake = predict(bayes.calibrated, test, { progress: true, label: 'bayes fake-quant eval' });
const bayesFixed = predict(bayes.fixedPoint, test, { progress: true, label: 'bayes fixed-point eval' });
const bayesAcc = accuracyOf(bayesFixed, test);
console.log(
  `bayes (all on the BPU): fixed-point test accuracy ${pct(bayesAcc)} (${((bayesAcc - floatAcc) * 100).toFixed(2)} points vs float), ` +
    `fake-quant ${pct(accuracyOf(bayesFake, test))}, top-1 agreement ${pct(agreement(bayesFake, bayesFixed))} of test samples (${seconds(t0).toFixed(1)} s)`,
);

t0 = performance.now();
const hybrid = postTrainingQuantize(float, {
  ...ptq,
  march: 'bernoulli2',
  prepare: { hybrid: true, partitioner: hybridPartitioner },
});
const devices = checkDeployDevice(hybrid.fixedPoint);
console.log(formatDeployDevice(devices));
const cpuNodes = devices.nodes.filter((n) => n.device === 'CPU').map((n) => n.name);
const hybridFake = predict(hybrid.calibrated, test, { progress: true, label: 'bernoulli2 fake-quant eval' });
const hybridFixed = predict(hybrid.fixedPoint, test, { progress: true, label: 'bernoulli2 hybrid eval' });
const hybridAcc = accuracyOf(hybridFixed, test);
console.log(
  `bernoulli2 hybrid: fixed-point test accuracy ${pct(hybridAcc)} (${((hybridAcc - floatAcc) * 100).toFixed(2)} points vs float), ` +
    `fake-quant ${pct(accuracyOf(hybridFake, test))}, top-1 agreement ${pct(agreement(hybridFake, hybridFixed))} of test samples, ` +
    `${devices.counts.CPU} CPU and ${devices.counts.BPU} BPU ops, ${devices.transitions} CPU/BPU transitions, ` +
    `${devices.segments.length} segments (${seconds(t0).toFixed(1)} s)`,
);

const summary = {
  version: 1,
  model: 'MobileHybridNet',
  data: dir,
  trainImages: train.labels.size,
  testImages: test.labels.size,
  training,
  calibration: { images: Math.min(Number(values.calib), train.labels.size), observer: values.observer },
  accuracy: { float: floatAcc, bayes: bayesAcc, bernoulli2Hybrid: hybridAcc },
  fakeQuantAgreement: { bayes: agreement(bayesFake, bayesFixed), bernoulli2Hybrid: agreement(hybridFake, hybridFixed) },
  bernoulli2: {
    cpuNodeCount: devices.counts.CPU,
    bpuNodeCount: devices.counts.BPU,
    cpuNodes,
    transitions: devices.transitions,
    segments: devices.segments.length,
  },
};
mkdirSync(dirname(values.json), { recursive: true });
writeFileSync(values.json, `${JSON.stringify(summary, null, 2)}\n`);
console.log(`wrote ${values.json}`);
