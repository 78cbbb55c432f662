// The quantization worker: loads the wasm kernels (two threads when the page is cross-origin isolated),
// then runs one job per message, posting progress and the result. Jobs are synchronous, so the page stays
// responsive while a job runs here.
import { marches, observers } from '@qtk/spec';
import { initWasmBackend } from '@qtk/tensor';
import '@qtk/observers/register'; // the observer menu lists the registered names
import { fetchDemoFiles } from './demo-assets.js';
import { JOB_BATCH, PROFILE_SAMPLES } from './job/defaults.js';
import { demoInputs, DEMO_MODEL_NAME } from './job/demo-inputs.js';
import type { FromWorker, JobOptions, JobSource, ToWorker } from './job/messages.js';
import { JobError, type QuantizeJob, runQuantizeJob } from './job/quantize-job.js';
import { parseLabels, samplesFromFiles } from './job/user-inputs.js';
import { importOnnx } from '@qtk/onnx';

const post = (message: FromWorker, transfer: Transferable[] = []) => self.postMessage(message, { transfer });

// Fetched at start, so once the page is ready a job needs no network.
const demoFiles = fetchDemoFiles();
demoFiles.catch(() => {}); // reported when the demo is run

async function jobOf(source: JobSource, options: JobOptions): Promise<QuantizeJob> {
  const common = { ...options, batch: JOB_BATCH, profileSamples: PROFILE_SAMPLES };
  if (source.kind === 'demo') {
    post({ type: 'progress', progress: { stage: 'load', done: 0, total: 1 } });
    const { onnx, calibration, test } = await demoInputs(await demoFiles);
    post({ type: 'progress', progress: { stage: 'load', done: 1, total: 1 } });
    return { ...common, onnx, modelName: DEMO_MODEL_NAME, calibration, test };
  }
  let shape: (number | null)[] | null;
  try {
    shape = importOnnx(source.onnx, { source: source.modelName }).inputSpecs[0]?.shape ?? null;
  } catch (e) {
    throw new JobError((e as Error).message);
  }
  const sampleShape = shape?.slice(1) ?? [];
  if (!shape || sampleShape.some((d) => d === null)) {
    throw new JobError(
      `${source.modelName}: its input shape is not fixed ([${(shape ?? []).map((d) => d ?? '?').join(', ')}]); export it with a fixed sample shape`,
    );
  }
  const calibration = samplesFromFiles(source.samples, sampleShape as number[], source.normalisation);
  const test =
    source.labels === null ? null : { images: calibration, labels: parseLabels(source.labels, calibration.shape[0]!) };
  return { ...common, onnx: source.onnx, modelName: source.modelName, calibration, test };
}

async function start(): Promise<void> {
  const wasm = await initWasmBackend();
  await demoFiles.catch(() => {});
  post({ type: 'ready', wasm, marches: marches.names(), observers: observers.names() });
  self.onmessage = async (event: MessageEvent<ToWorker>) => {
    try {
      const job = await jobOf(event.data.source, event.data.options);
      const result = runQuantizeJob(job, (progress) => post({ type: 'progress', progress }));
      post({ type: 'result', result }, [result.modelFile.buffer, result.fixedOnnx.buffer] as Transferable[]);
    } catch (e) {
      // a bad file or option (typed errors of the packages included) versus a bug in the app
      const userError =
        e instanceof JobError || !(e instanceof TypeError || e instanceof RangeError || e instanceof ReferenceError);
      post({ type: 'error', message: (e as Error).message ?? String(e), userError });
    }
  };
}

void start();
