// Quantizes the reference network and MobileHybridNet for both marches, exports each fixed-point
// model as integer ONNX and runs it in onnxruntime-node beside QTK on the test set: the share of
// bit-identical outputs, both accuracies, both run times and a node-by-node check of the first batch.
// MobileHybridNet runs with int16 layers on bayes and in hybrid mode on bernoulli2.
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { hybridPartitioner } from '@qtk/hybrid';
import '@qtk/march-bayes';
import '@qtk/march-bernoulli2';
import type { Module } from '@qtk/nn';
import { loadStateDictFileSync } from '@qtk/nn/node';
import { dataDirOf, loadDataset } from './data.js';
import { checkIntegerOnnx, type IntegerOnnxCheck } from './integer-onnx-check.js';
import { MobileHybridNet } from './mobile-hybrid-net.js';
import { firstBatches, postTrainingQuantize, type PtqOptions } from './ptq.js';
import { ReferenceNet } from './reference-net.js';
import { scriptArgs } from './script-args.js';

const HELP = `Usage: pnpm integer-onnx [--data DIR] [--limit N] [--models ref,mobile] [--mobile-weights FILE] [--json FILE]

Exports the fixed-point reference network and MobileHybridNet (bayes with int16 layers; bernoulli2 in
hybrid mode) as integer ONNX and compares onnxruntime-node with QTK on the Fashion-MNIST test set.
  --data DIR            IDX folder (default: the subset in the repository; debian: /usr/share/datasets/fashion-mnist)
  --limit N             test images (default: all)
  --models LIST         ref, mobile or both (default ref,mobile)
  --mobile-weights FILE MobileHybridNet float weights (default out/mobile-hybrid-net-float-full.qtk, written by
                        pnpm mobile-hybrid --data debian)
  --json FILE           summary (default out/integer-onnx.json)
`;

const values = scriptArgs(HELP, {
  limit: { type: 'string' },
  models: { type: 'string', default: 'ref,mobile' },
  'mobile-weights': { type: 'string', default: 'out/mobile-hybrid-net-float-full.qtk' },
  json: { type: 'string', default: 'out/integer-onnx.json' },
});
const { dir } = dataDirOf(values.data);
const train = loadDataset(dir, 'train', 1024);
const test = loadDataset(dir, 'test', values.limit ? Number(values.limit) : undefined);
const calibration = firstBatches(train, 1024);

/** int16 activations of MobileHybridNet on bayes: the squeeze-excite gates and the tanh head. */
const MOBILE_INT16: PtqOptions['dtypes'] = {
  'block1.se': 'qint16',
  'block2.se': 'qint16',
  mergePointwise: 'qint16',
};

interface Case {
  model: string;
  march: string;
  make: () => Module;
  ptq: Partial<PtqOptions>;
}

const cases: Case[] = [];
const models = values.models.split(',');
if (models.includes('ref')) {
  const make = () => {
    const m = new ReferenceNet();
    m.loadStateDict(loadStateDictFileSync('apps/demo/assets/reference-net.qtk'));
    return m;
  };
  cases.push({ model: 'ReferenceNet', march: 'bayes', make, ptq: {} });
  cases.push({ model: 'ReferenceNet', march: 'bernoulli2', make, ptq: {} });
}
if (models.includes('mobile')) {
  const weights = values['mobile-weights'];
  if (!existsSync(weights)) {
    console.error(
      `error: ${weights} not found; train it with pnpm mobile-hybrid --data debian, or pass --mobile-weights`,
    );
    process.exit(2);
  }
  const make = () => {
    const m = new MobileHybridNet();
    m.loadStateDict(loadStateDictFileSync(weights));
    return m;
  };
  cases.push({ model: 'MobileHybridNet', march: 'bayes', make, ptq: { dtypes: MOBILE_INT16 } });
  cases.push({
    model: 'MobileHybridNet',
    march: 'bernoulli2 (hybrid)',
    make,
    ptq: { prepare: { hybrid: true, partitioner: hybridPartitioner } },
  });
}

const results: (IntegerOnnxCheck & { model: string; march: string })[] = [];
const pct = (v: number) => `${(v * 100).toFixed(2)} %`;
for (const c of cases) {
  const march = c.march.split(' ')[0]!;
  const { fixedPoint } = postTrainingQuantize(c.make(), { calibration, ...c.ptq, march });
  const r = await checkIntegerOnnx(fixedPoint, test, { progress: true, label: `${c.model} ${c.march}` });
  results.push({ model: c.model, march: c.march, ...r });
  console.log(
    `${c.model} ${c.march}: identical outputs ${pct(r.identicalOutputs)} of ${r.samples}, accuracy QTK ${pct(r.accuracy.qtk)} / onnxruntime ${pct(r.accuracy.onnxruntime)}, ` +
      `time QTK ${r.seconds.qtk.toFixed(2)} s / onnxruntime ${r.seconds.onnxruntime.toFixed(2)} s; first batch: ${r.intermediates.summary}`,
  );
}
mkdirSync(dirname(values.json), { recursive: true });
writeFileSync(values.json, `${JSON.stringify({ version: 1, data: dir, results }, null, 2)}\n`);
console.log(`wrote ${values.json}`);
if (results.some((r) => r.identicalOutputs !== 1 || !r.intermediates.identical)) process.exitCode = 1;
