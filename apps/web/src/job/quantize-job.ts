// What the web app does with a model, in code that runs the same in a browser's Web Worker and in Node
// (the end-to-end test runs it in Node to check the page's figures): import the float ONNX model,
// evaluate it, prepare it for a march, calibrate, convert, evaluate the fixed-point model, compare the
// two node by node, and write the fixed-point model file and its ONNX export.
import { ConversionError, modelToBytes, quantizePostTraining } from '@qtk/core';
import type { GraphModule } from '@qtk/ir';
import { checkDeployDevice, hybridPartitioner } from '@qtk/hybrid';
import { accuracy, agreement as top1Agreement, batchesOf } from '@qtk/nn';
import { exportOnnxBytes, importOnnx, type OnnxGraphModule } from '@qtk/onnx';
// registers the integer export rules exportOnnxBytes writes the fixed-point model with
import '@qtk/onnx-deploy';
import { featuremapSimilarity } from '@qtk/profiler';
import { Tensor } from '@qtk/tensor';
import '@qtk/march-bayes';
import '@qtk/march-bernoulli2';
import { predict } from './predict.js';
import type { JobStage } from './stages.js';

export interface LabelledSamples {
  /** [N, ...sample shape] float32, preprocessed as the model expects. */
  readonly images: Tensor;
  /** N class indices. */
  readonly labels: Int32Array;
}

export interface QuantizeJob {
  /** The float model, an ONNX file's bytes (one input). */
  readonly onnx: Uint8Array;
  /** Its name in messages and in the model file's metadata. */
  readonly modelName: string;
  /** Calibration samples, [N, ...sample shape]. */
  readonly calibration: Tensor;
  /** Labelled samples to measure float and fixed-point accuracy on, when there are labels. */
  readonly test: LabelledSamples | null;
  readonly march: string;
  /** Activation observer; weights use per-channel min-max. */
  readonly observer: string;
  /** Operators the march cannot run stay float on the CPU (a heterogeneous model). */
  readonly hybrid: boolean;
  /** Scale of the input quantization (1/128 for inputs in [-1, 1]). */
  readonly inputScale: number;
  readonly batch: number;
  /** Samples the node-by-node comparison runs on (the first test or calibration samples). */
  readonly profileSamples: number;
}

export interface JobProgress {
  readonly stage: JobStage;
  readonly done: number;
  readonly total: number;
}

export interface DeviceRow {
  readonly name: string;
  readonly type: string;
  readonly device: 'BPU' | 'CPU';
  readonly reason: string;
}

export interface SimilarityRow {
  readonly name: string;
  readonly type: string;
  /** Cosine similarity of the fixed-point node's output to the fake-quant model's. */
  readonly cosine: number | null;
  /** The same, with the node fed the fake-quant model's inputs: the error the node adds itself. */
  readonly sameInputCosine: number | null;
}

export interface QuantizeJobResult {
  readonly modelName: string;
  readonly march: string;
  readonly observer: string;
  readonly hybrid: boolean;
  readonly sampleShape: readonly number[];
  readonly calibrationSamples: number;
  /** Null without labels. */
  readonly accuracy: { readonly float: number; readonly fixedPoint: number; readonly samples: number } | null;
  /** Top-1 agreement of the fixed-point model with the float model on the labelled samples. */
  readonly agreement: number | null;
  readonly seconds: { readonly quantize: number; readonly total: number };
  readonly devices: readonly DeviceRow[];
  readonly deviceCounts: { readonly BPU: number; readonly CPU: number };
  readonly similarity: readonly SimilarityRow[];
  /** Nodes below the profiler's cosine threshold. */
  readonly flagged: readonly string[];
  readonly warnings: readonly string[];
  /** The fixed-point model as a QTK model file. */
  readonly modelFile: Uint8Array;
  /** The fixed-point model exported as integer ONNX. */
  readonly fixedOnnx: Uint8Array;
}

/** A failure the user can act on (a bad file, an operator the march cannot run), as opposed to a bug. */
export class JobError extends Error {
  override readonly name = 'JobError';
}

/** The first `n` samples of `x`. */
function head(x: Tensor, n: number): Tensor {
  const per = x.size / x.shape[0]!;
  const k = Math.min(n, x.shape[0]!);
  const data = (x.values() as Float32Array).slice(0, k * per);
  return new Tensor({ data, shape: [k, ...x.shape.slice(1)], dtype: 'float32' });
}

function importModel(job: QuantizeJob): { float: GraphModule; sampleShape: number[]; inputName: string } {
  let float: OnnxGraphModule;
  try {
    float = importOnnx(job.onnx, { source: job.modelName });
  } catch (e) {
    throw new JobError((e as Error).message);
  }
  if (float.inputSpecs.length !== 1) {
    throw new JobError(
      `${job.modelName}: the model has ${float.inputSpecs.length} inputs; the web app handles models with one input`,
    );
  }
  const declared = float.inputSpecs[0]!.shape;
  const sampleShape = job.calibration.shape.slice(1);
  if (declared) {
    const want = declared.slice(1);
    const fits = want.length === sampleShape.length && want.every((d, i) => d === null || d === sampleShape[i]);
    if (!fits) {
      const fmt = (s: readonly (number | null)[]) => `[${s.map((d) => d ?? '?').join(', ')}]`;
      throw new JobError(
        `${job.modelName} takes samples of shape ${fmt(want)}, but the calibration samples are ${fmt(sampleShape)}`,
      );
    }
  }
  return {
    float,
    sampleShape,
    inputName: float.inputSpecs[0]!.onnxName,
  };
}

/** Runs the whole job; `onProgress` is called as each stage advances. */
export function runQuantizeJob(job: QuantizeJob, onProgress: (p: JobProgress) => void = () => {}): QuantizeJobResult {
  const t0 = performance.now();
  const warnings: string[] = [];
  const onWarning = (m: string) => warnings.push(m);
  onProgress({ stage: 'import', done: 0, total: 1 });
  const { float, sampleShape, inputName } = importModel(job);
  onProgress({ stage: 'import', done: 1, total: 1 });

  const test = job.test;
  const evalBatches = test ? Math.ceil(test.labels.length / job.batch) : 0;
  const floatPred = test
    ? predict(float, test.images, job.batch, (done) => onProgress({ stage: 'float eval', done, total: evalBatches }))
    : null;

  const tq = performance.now();
  const calibBatches = Math.ceil(job.calibration.shape[0]! / job.batch);
  const { calibrated: prepared, fixed } = quantizePostTraining(float, {
    march: job.march,
    observer: job.observer,
    calibration: batchesOf(job.calibration, job.batch),
    inputQuantStubs: { scale: job.inputScale },
    outputDeQuantStubs: false, // as qtk quantize: the model file and its ONNX export keep integer outputs
    ...(job.hybrid ? { hybrid: true, partitioner: hybridPartitioner } : {}),
    onWarning,
    onBatch: (i) => onProgress({ stage: 'calibrate', done: i + 1, total: calibBatches }),
    onStage: (stage) => {
      if (stage === 'convert') onProgress({ stage: 'convert', done: 0, total: 1 });
    },
    explainError: (e, { stage }) =>
      stage === 'convert' && ConversionError.isInstance(e)
        ? new JobError(
            `cannot convert ${job.modelName} for '${job.march}': ${e.message}${job.hybrid ? '' : '\nTick "hybrid" to run these operators on the CPU (a heterogeneous model).'}`,
          )
        : e,
  });
  const quantizeSeconds = (performance.now() - tq) / 1000;
  onProgress({ stage: 'convert', done: 1, total: 1 });

  let accuracyResult: QuantizeJobResult['accuracy'] = null;
  let agreement: number | null = null;
  if (test && floatPred) {
    const fixedPred = predict(fixed, test.images, job.batch, (done) =>
      onProgress({ stage: 'fixed-point eval', done, total: evalBatches }),
    );
    accuracyResult = {
      float: accuracy(floatPred, test.labels),
      fixedPoint: accuracy(fixedPred, test.labels),
      samples: test.labels.length,
    };
    agreement = top1Agreement(floatPred, fixedPred);
  }

  onProgress({ stage: 'profile', done: 0, total: 1 });
  const profiled = head(test?.images ?? job.calibration, job.profileSamples);
  const sim = featuremapSimilarity(prepared, fixed, profiled);
  const similarity = sim.nodes.map((n) => ({
    name: n.name,
    type: n.type,
    cosine: n.cosine,
    sameInputCosine: n.sameInput?.cosine ?? null,
  }));
  const report = checkDeployDevice(fixed);
  const devices = report.nodes.map((n) => ({ name: n.name, type: n.type, device: n.device, reason: n.reason }));
  onProgress({ stage: 'profile', done: 1, total: 1 });

  onProgress({ stage: 'export', done: 0, total: 1 });
  const example = new Tensor({
    data: new Float32Array(sampleShape.reduce((a, b) => a * b, 1)),
    shape: [1, ...sampleShape],
    dtype: 'float32',
  });
  const fixedOnnx = exportOnnxBytes(fixed, example, { inputNames: [inputName] });
  const modelFile = modelToBytes(fixed, {
    meta: {
      tool: 'qtk web',
      source: job.modelName,
      march: job.march,
      observer: job.observer,
      inputShape: [null, ...sampleShape],
      inputScale: job.inputScale,
      calibration: { samples: job.calibration.shape[0], batches: calibBatches },
      ...(job.hybrid ? { hybrid: true } : {}),
    },
  });
  onProgress({ stage: 'export', done: 1, total: 1 });

  return {
    modelName: job.modelName,
    march: job.march,
    observer: job.observer,
    hybrid: job.hybrid,
    sampleShape,
    calibrationSamples: job.calibration.shape[0]!,
    accuracy: accuracyResult,
    agreement,
    seconds: { quantize: quantizeSeconds, total: (performance.now() - t0) / 1000 },
    devices,
    deviceCounts: report.counts,
    similarity,
    flagged: sim.flagged,
    warnings,
    modelFile,
    fixedOnnx,
  };
}
