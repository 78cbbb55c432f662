// pnpm profile-broken-layer: MobileHybridNet quantized with one layer broken on purpose (a tiny fixed output
// scale), profiled; prints where the first-divergence walk and the report point, writes profiler.html.
import { existsSync } from 'node:fs';
import '@qtk/march-bayes';
import '@qtk/march-bernoulli2';
import { loadStateDictFileSync } from '@qtk/nn/node';
import { Generator } from '@qtk/tensor';
import { takeBatch } from './batches.js';
import { BROKEN_NODE, profileBrokenLayer } from './broken-layer.js';
import { dataDirOf, loadDataset } from './data.js';
import { MobileHybridNet } from './mobile-hybrid-net.js';
import { scriptArgs } from './script-args.js';

const HELP = `Usage: pnpm profile-broken-layer [--data DIR|debian] [--weights FILE] [--march ID] [--scale S] [--out DIR]

Quantizes MobileHybridNet with ${BROKEN_NODE}'s output at a tiny fixed scale, runs the profiler (float vs
calibrated, and float → fake quant → fixed point → onnxruntime) and writes the report.
  --data DIR      Fashion-MNIST IDX folder (default: the subset in the repository; debian: /usr/share/datasets/fashion-mnist)
  --weights FILE  float weights (pnpm mobile-hybrid writes them; default out/mobile-hybrid-net-float-full.qtk when it
                  exists, else seeded random weights)
  --march ID      bayes (default) or bernoulli2
  --scale S       the broken layer's fixed scale (default 1e-5)
  --out DIR       the report folder (default runs/profile-broken-layer)
`;

const values = scriptArgs(HELP, {
  weights: { type: 'string' },
  march: { type: 'string', default: 'bayes' },
  scale: { type: 'string', default: '1e-5' },
  out: { type: 'string', default: 'runs/profile-broken-layer' },
});
const { dir } = dataDirOf(values.data);
const model = new MobileHybridNet({ generator: new Generator(3) });
const weights = values.weights ?? 'out/mobile-hybrid-net-float-full.qtk';
if (existsSync(weights)) {
  model.loadStateDict(loadStateDictFileSync(weights));
  console.log(`float weights: ${weights}`);
} else if (values.weights) {
  console.error(`error: --weights ${values.weights} does not exist`);
  process.exit(2);
} else console.log('float weights: seeded random (run pnpm mobile-hybrid --data debian for trained ones)');
const train = loadDataset(dir, 'train', 512);
const calibration = [0, 128, 256, 384].map((i) => takeBatch(train, null, i, 128).images);
const inputs = takeBatch(loadDataset(dir, 'test', 32), null, 0, 32).images;
const t0 = performance.now();
const r = await profileBrokenLayer(model, {
  march: values.march!,
  calibration,
  inputs,
  scale: Number(values.scale),
  outDir: values.out!,
});
for (const n of r.report.summary) console.log(`${n.severity.padEnd(7)} ${n.text}`);
console.log(`first divergence: ${JSON.stringify(r.results.firstDivergence?.first)}`);
console.log(`first flagged by similarity: ${r.results.featuremapSimilarity.flagged[0] ?? 'none'}`);
console.log(`written: ${r.written?.html} (${((performance.now() - t0) / 1000).toFixed(1)} s)`);
