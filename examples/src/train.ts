import { accuracy, CosineAnnealingLR, type Module, ProgressBar, SGD } from '@qtk/nn';
import { crossEntropy, Generator, noGrad, type Tensor, argmax } from '@qtk/tensor';
import { takeBatch } from './batches.js';

export interface Dataset {
  /** [N, 1, 28, 28] float32 in [-1, 1]. */
  images: Tensor;
  /** [N] int32 class ids. */
  labels: Tensor;
}

export interface FloatTrainOptions {
  epochs: number;
  lr: number;
  batchSize?: number;
  momentum?: number;
  weightDecay?: number;
  seed?: number;
  /** Stop after this many steps (benchmarks); the cosine schedule still spans the whole run. */
  maxSteps?: number;
  progress?: boolean;
  /** Label of the progress bar (default 'float train'). */
  label?: string;
  /** Called after each epoch with its index and mean training loss. */
  onEpoch?: (epoch: number, meanLoss: number) => void;
}

export interface FloatTrainResult {
  steps: number;
  meanStepMs: number;
  finalLoss: number;
}

/**
 * The float protocol of benchmark.md: SGD with momentum and weight decay, cosine decay of the
 * learning rate per step, cross entropy, shuffled batches (the last partial batch is dropped).
 */
export function trainFloat(model: Module, data: Dataset, options: FloatTrainOptions): FloatTrainResult {
  const batchSize = options.batchSize ?? 64;
  const n = data.images.shape[0]!;
  const stepsPerEpoch = Math.floor(n / batchSize);
  const totalSteps = options.epochs * stepsPerEpoch;
  const optimizer = new SGD(model.parameters(), {
    lr: options.lr,
    momentum: options.momentum ?? 0.9,
    weightDecay: options.weightDecay ?? 5e-4,
  });
  const schedule = new CosineAnnealingLR(optimizer, { tMax: Math.max(1, totalSteps) });
  const gen = new Generator(options.seed ?? 0);
  const limit = Math.min(totalSteps, options.maxSteps ?? Infinity);
  const bar = new ProgressBar({ total: limit, label: options.label ?? 'float train', enabled: options.progress });
  let steps = 0;
  let lastLoss = NaN;
  const t0 = performance.now();
  model.train();
  outer: for (let epoch = 0; epoch < options.epochs; epoch++) {
    const order = gen.permutation(n);
    let lossSum = 0;
    let count = 0;
    for (let b = 0; b < stepsPerEpoch; b++) {
      if (steps >= limit) break outer;
      const { images, labels } = takeBatch(data, order, b * batchSize, batchSize);
      const loss = crossEntropy(model.call(images), labels);
      optimizer.zeroGrad();
      loss.backward();
      optimizer.step();
      schedule.step();
      lastLoss = loss.item();
      lossSum += lastLoss;
      count++;
      steps++;
      bar.tick(1, { loss: lastLoss.toFixed(4), lr: schedule.getLastLr()[0]!.toExponential(2) });
    }
    options.onEpoch?.(epoch, lossSum / Math.max(1, count));
  }
  bar.finish();
  return { steps, meanStepMs: (performance.now() - t0) / Math.max(1, steps), finalLoss: lastLoss };
}

/** Top-1 class of every image in eval mode, batch 500 as in the eval protocol. */
export function predict(
  model: Module,
  data: Dataset,
  options: { batchSize?: number; progress?: boolean; label?: string } = {},
): Int32Array {
  const batchSize = options.batchSize ?? 500;
  const n = data.images.shape[0]!;
  const wasTraining = model.training;
  model.eval();
  const out = new Int32Array(n);
  const bar = new ProgressBar({ total: n, label: options.label ?? 'evaluate', enabled: options.progress });
  noGrad(() => {
    for (let i = 0; i < n; i += batchSize) {
      const m = Math.min(batchSize, n - i);
      const { images } = takeBatch(data, null, i, m);
      out.set(argmax(model.call(images) as Tensor, 1).values() as Int32Array, i);
      bar.tick(m);
    }
  });
  bar.finish();
  if (wasTraining) model.train();
  return out;
}

/** Top-1 accuracy in eval mode, batch 500 as in the eval protocol. */
export function evaluate(
  model: Module,
  data: Dataset,
  options: { batchSize?: number; progress?: boolean; label?: string } = {},
): number {
  return accuracyOf(predict(model, data, options), data);
}

/** The fraction of predictions equal to the dataset's labels (`@qtk/nn`'s accuracy on a Dataset). */
export function accuracyOf(predictions: ArrayLike<number>, data: Dataset): number {
  return accuracy(predictions, data.labels.values());
}
