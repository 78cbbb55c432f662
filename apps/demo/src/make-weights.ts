// `pnpm make-demo-weights [--data DIR] [--out FILE]`: regenerates the demo's embedded float weights
// (apps/demo/assets/reference-net.qtk) with the float protocol of docs/benchmark.md on the full
// Fashion-MNIST: 8 epochs, SGD momentum 0.9, lr 0.05 cosine, wd 5e-4, batch 64, seed 0. About 35
// minutes on 2 cores. The file is written atomically (temporary file, fsync, rename).
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { parseArgs } from 'node:util';
import { evaluate, loadDataset, ReferenceNet, resolveFullData, trainFloat } from '@qtk/examples';
import { saveStateDictSync } from '@qtk/nn/node';
import { Generator } from '@qtk/tensor';
import { EMBEDDED_WEIGHTS } from './weights.js';

const HELP = `Usage: pnpm make-demo-weights [--data DIR] [--out FILE] [--epochs N] [--seed N]

Trains the reference network with the float protocol (8 epochs) on the full Fashion-MNIST and writes
the demo's embedded weights.
  --data DIR    folder with the four Fashion-MNIST IDX .gz files (default /usr/share/datasets/fashion-mnist,
                from Debian's dataset-fashion-mnist package)
  --out FILE    default ${EMBEDDED_WEIGHTS.replace(/.*apps\//, 'apps/')}
  --epochs N    default 8
  --seed N      default 0
`;

function fail(message: string): never {
  process.stderr.write(`error: ${message}\n`);
  process.exit(2);
}

function parseCli() {
  try {
    return parseArgs({
      options: {
        data: { type: 'string' },
        out: { type: 'string', default: EMBEDDED_WEIGHTS },
        epochs: { type: 'string', default: '8' },
        seed: { type: 'string', default: '0' },
        help: { type: 'boolean', short: 'h' },
      },
    }).values;
  } catch (e) {
    fail(`${(e as Error).message.split('\n')[0]} (see --help)`);
  }
}
const values = parseCli();
if (values.help) {
  process.stdout.write(HELP);
  process.exit(0);
}
const epochs = Number(values.epochs);
const seed = Number(values.seed);
if (!Number.isInteger(epochs) || epochs < 1) fail(`--epochs expects an integer >= 1, got '${values.epochs}'`);
if (!Number.isInteger(seed) || seed < 0) fail(`--seed expects an integer >= 0, got '${values.seed}'`);
const dir = resolveFullData(values.data);
if (!dir)
  fail(
    'the full Fashion-MNIST was not found: pass --data DIR (the four IDX .gz files) or apt-get install dataset-fashion-mnist',
  );

const train = loadDataset(dir, 'train');
const test = loadDataset(dir, 'test');
console.log(
  `data: ${dir} (${train.labels.size} train, ${test.labels.size} test images); ${epochs} epochs, seed ${seed}`,
);
const model = new ReferenceNet({ generator: new Generator(seed) });
trainFloat(model, train, {
  epochs,
  lr: 0.05,
  batchSize: 64,
  seed,
  progress: true,
  onEpoch: (e, loss) => console.log(`epoch ${e + 1}/${epochs}: mean loss ${loss.toFixed(4)}`),
});
const acc = evaluate(model, test, { progress: true });
console.log(`float test accuracy: ${(acc * 100).toFixed(2)} %`);
mkdirSync(dirname(values.out!), { recursive: true });
saveStateDictSync(model.stateDict(), values.out!);
console.log(`saved ${values.out}`);
