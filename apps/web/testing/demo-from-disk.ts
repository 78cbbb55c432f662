// The demo's inputs read from the repository's files, and the job the page runs on them by default: what the
// end-to-end test and the timing script run in Node to compare with the page.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { DEFAULT_JOB_OPTIONS, JOB_BATCH, PROFILE_SAMPLES } from '../src/job/defaults.js';
import { DEMO_MODEL_NAME, demoInputs } from '../src/job/demo-inputs.js';
import type { QuantizeJob } from '../src/job/quantize-job.js';

const fromRepo = (path: string) => readFileSync(fileURLToPath(new URL(`../../../${path}`, import.meta.url)));
const SUBSET = 'data/fashion-mnist-subset/';

export function demoInputsFromDisk() {
  return demoInputs({
    weights: fromRepo('apps/demo/assets/reference-net.qtk'),
    trainImages: fromRepo(`${SUBSET}train-images-idx3-ubyte.gz`),
    trainLabels: fromRepo(`${SUBSET}train-labels-idx1-ubyte.gz`),
    testImages: fromRepo(`${SUBSET}t10k-images-idx3-ubyte.gz`),
    testLabels: fromRepo(`${SUBSET}t10k-labels-idx1-ubyte.gz`),
  });
}

/** The first `n` test images of the subset as raw 8-bit pixels (inflated with the gzip of the platform). */
export async function demoTestPixels(n: number): Promise<Uint8Array> {
  const stream = new Blob([fromRepo(`${SUBSET}t10k-images-idx3-ubyte.gz`)])
    .stream()
    .pipeThrough(new DecompressionStream('gzip'));
  return new Uint8Array(await new Response(stream).arrayBuffer()).subarray(16, 16 + n * 784);
}

/** The demo job with the page's default settings. */
export async function defaultDemoJob(): Promise<QuantizeJob> {
  return {
    ...(await demoInputsFromDisk()),
    ...DEFAULT_JOB_OPTIONS,
    modelName: DEMO_MODEL_NAME,
    batch: JOB_BATCH,
    profileSamples: PROFILE_SAMPLES,
  };
}
