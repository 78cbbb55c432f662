// Trains the reference network in float32 (the float protocol of docs/benchmark.md) and saves its
// state dict. Without --data it trains briefly on the subset committed with the repository.
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { saveStateDictSync } from '@qtk/nn/node';
import { Generator, wasmStatus } from '@qtk/tensor';
import { ReferenceNet } from './reference-net.js';
import { evaluate, trainFloat } from './train.js';
import { dataDirOf, loadDataset } from './data.js';
import { scriptArgs } from './script-args.js';

const HELP = `Usage: pnpm train-float [--data DIR] [--epochs N] [--lr X] [--batch N] [--limit N] [--seed N] [--out FILE]

Trains the QTK reference network (ResNet-style, 77,754 parameters) on Fashion-MNIST.
  --data DIR    folder with the four Fashion-MNIST IDX .gz files (default: the subset in the repository;
                --data debian uses /usr/share/datasets/fashion-mnist from the dataset-fashion-mnist package)
  --epochs N    epochs (default 8 with --data, 2 on the subset)
  --lr X        initial learning rate, cosine-decayed per step (default 0.05)
  --batch N     batch size (default 64)
  --limit N     use only the first N training images
  --seed N      seed for initialisation and shuffling (default 0)
  --out FILE    where to save the trained state dict (default out/reference-net-float.qtk)
`;

const values = scriptArgs(HELP, {
  epochs: { type: 'string' },
  lr: { type: 'string', default: '0.05' },
  batch: { type: 'string', default: '64' },
  limit: { type: 'string' },
  seed: { type: 'string', default: '0' },
  out: { type: 'string', default: 'out/reference-net-float.qtk' },
});

const { dir, full } = dataDirOf(values.data);
const epochs = Number(values.epochs ?? (full ? 8 : 2));
const seed = Number(values.seed);
const train = loadDataset(dir, 'train', values.limit ? Number(values.limit) : undefined);
const test = loadDataset(dir, 'test');
console.log(`data: ${dir} (${train.images.shape[0]} train, ${test.images.shape[0]} test images)`);
const status = wasmStatus();
console.log(`gemm backend: ${status.loaded ? 'wasm SIMD' : `cpu (${status.reason})`}`);

const model = new ReferenceNet({ generator: new Generator(seed) });
const result = trainFloat(model, train, {
  epochs,
  lr: Number(values.lr),
  batchSize: Number(values.batch),
  seed,
  progress: true,
  onEpoch: (e, loss) => console.log(`epoch ${e + 1}/${epochs}: mean loss ${loss.toFixed(4)}`),
});
const acc = evaluate(model, test, { progress: true });
console.log(`steps: ${result.steps}, mean step ${result.meanStepMs.toFixed(1)} ms`);
console.log(`float test accuracy: ${(acc * 100).toFixed(2)} %`);
mkdirSync(dirname(values.out!), { recursive: true });
saveStateDictSync(model.stateDict(), values.out!);
console.log(`saved ${values.out}`);
