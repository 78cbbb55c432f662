// The web app's demo job in Node, as the page runs it by default (bayes, mse, 1,024 calibration images, 2,000
// test images); prints {"quantize": s, "total": s} (web-vs-node.ts runs it in a child process).
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { demoInputs } from '../src/job/demo-inputs.js';
import { runQuantizeJob } from '../src/job/quantize-job.js';

const at = (path: string) => readFileSync(fileURLToPath(new URL(`../../../${path}`, import.meta.url)));
const subset = 'data/fashion-mnist-subset/';
const inputs = await demoInputs({
  weights: at('apps/demo/assets/reference-net.qtk'),
  trainImages: at(`${subset}train-images-idx3-ubyte.gz`),
  trainLabels: at(`${subset}train-labels-idx1-ubyte.gz`),
  testImages: at(`${subset}t10k-images-idx3-ubyte.gz`),
  testLabels: at(`${subset}t10k-labels-idx1-ubyte.gz`),
});
const r = runQuantizeJob({
  ...inputs,
  modelName: 'reference-net.onnx',
  march: 'bayes',
  observer: 'mse',
  hybrid: false,
  inputScale: 1 / 128,
  batch: 64,
  profileSamples: 32,
});
console.log(JSON.stringify(r.seconds));
