import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { loadFashionMnist } from '@qtk/nn/node';
import { Tensor } from '@qtk/tensor';
import { CliError } from '../io.js';
import type { SampleInput } from '../sample-inputs.js';
import { loadInputSamples } from './input-samples.js';
import { labelsToInt32, readLabelValues, type Preprocess } from './samples.js';

export interface EvalData {
  /** One [N, ...] float32 tensor per model input. */
  readonly inputs: Tensor[];
  readonly labels: Int32Array;
  /** The file the labels came from (a labels file, or the IDX labels file). */
  readonly labelsFile: string;
  /** The largest label as written (labels past the int32 range are capped in `labels`), and its 1-based line. */
  readonly largestLabel: { readonly value: number; readonly line: number };
  /** How the data was read, for the report. */
  readonly source: string;
}

function largest(values: ArrayLike<number>): { value: number; line: number } {
  let at = 0;
  for (let i = 1; i < values.length; i++) if (values[i]! > values[at]!) at = i;
  return { value: values[at] ?? 0, line: at + 1 };
}

/**
 * Refuses labels the model cannot predict (a label >= its number of classes): otherwise such samples
 * count as wrong and the accuracy is silently low.
 */
export function checkLabelClasses(data: EvalData, classes: number): void {
  const { value, line } = data.largestLabel;
  if (value < classes) return;
  throw new CliError(
    `${data.labelsFile}, label ${line}: class ${value} is not a class of the model, which has ${classes} classes (0 to ${classes - 1}); ` +
      'fix the labels, or evaluate the model these labels belong to',
  );
}

/** Whether `dir` holds Fashion-MNIST-style IDX files of this split. */
export function hasIdx(dir: string, split: 'train' | 'test'): boolean {
  const base = `${split === 'train' ? 'train' : 't10k'}-images-idx3-ubyte`;
  return existsSync(join(dir, base)) || existsSync(join(dir, `${base}.gz`));
}

/** IDX files hold images for one input: a model of several is refused with the layout it needs. */
function idxFor(dir: string, split: 'train' | 'test', inputs: readonly SampleInput[]): boolean {
  if (!hasIdx(dir, split)) return false;
  if (inputs.length > 1)
    throw new CliError(
      `${dir} holds Fashion-MNIST IDX files, which feed a model with one input; this model has ${inputs.length} (${inputs.map((i) => i.name).join(', ')}): ` +
        'give each input a sub-folder named after it (DIR/<input>/) or a .npy batch (DIR/<input>.npy)',
    );
  return true;
}

/**
 * An evaluation set: the IDX files of `dir` (Fashion-MNIST layout, images normalised to [-1, 1] as
 * (pixel/255 − 0.5)/0.5), or else its .npy / image files (loadInputSamples: one folder per input for a model of
 * several) with a labels file (one integer class per line, in sorted file-name order; rows of a batched .npy in order).
 */
export function loadEvalData(
  dir: string,
  o: {
    split: 'train' | 'test';
    labels?: string;
    inputs: readonly SampleInput[];
    preprocess: Preprocess;
    limit?: number;
  },
): EvalData {
  if (o.labels === undefined && idxFor(dir, o.split, o.inputs)) {
    const d = loadFashionMnist(dir, { split: o.split, ...(o.limit !== undefined ? { limit: o.limit } : {}) });
    const labels = d.labels.values() as Int32Array;
    const base = join(dir, `${o.split === 'train' ? 'train' : 't10k'}-labels-idx1-ubyte`);
    return {
      inputs: [d.images],
      labels,
      labelsFile: existsSync(base) ? base : `${base}.gz`,
      largestLabel: largest(labels),
      source: `IDX ${o.split} split in ${dir}`,
    };
  }
  const labelsFile = o.labels ?? join(dir, 'labels.txt');
  const s = loadInputSamples(dir, o.inputs, { what: 'data', preprocess: o.preprocess });
  const count = s.tensors[0]!.shape[0]!;
  const values = readLabelValues(labelsFile, count);
  const n = Math.min(count, o.limit ?? Infinity);
  const inputs = n === count ? s.tensors : s.tensors.map((t) => sliceRows(t, n));
  const used = values.slice(0, n);
  return {
    inputs,
    labels: labelsToInt32(used),
    labelsFile,
    largestLabel: largest(used),
    source: `${s.source}, labels from ${labelsFile}`,
  };
}

/**
 * Inputs without labels (qtk compare): the IDX images of `dir` as loadEvalData reads them, or its
 * .npy / image files (loadInputSamples); no labels file is needed. `names`: one per sample (Samples.names;
 * IDX samples are '<split>-<index>').
 */
export function loadInputData(
  dir: string,
  o: { split: 'train' | 'test'; inputs: readonly SampleInput[]; preprocess: Preprocess; limit?: number },
): { inputs: Tensor[]; source: string; names: readonly string[] } {
  if (idxFor(dir, o.split, o.inputs)) {
    const d = loadFashionMnist(dir, { split: o.split, ...(o.limit !== undefined ? { limit: o.limit } : {}) });
    const n = d.images.shape[0]!;
    const width = String(n - 1).length;
    const names = Array.from({ length: n }, (_, i) => `${o.split}-${String(i).padStart(width, '0')}`);
    return { inputs: [d.images], source: `IDX ${o.split} split in ${dir}`, names };
  }
  const s = loadInputSamples(dir, o.inputs, {
    what: 'data',
    preprocess: o.preprocess,
    ...(o.limit !== undefined ? { limit: o.limit } : {}),
  });
  return { inputs: s.tensors, source: s.source, names: s.names };
}

function sliceRows(t: Tensor, n: number): Tensor {
  const per = t.shape.slice(1).reduce((p, d) => p * d, 1);
  return new Tensor({
    data: (t.values() as Float32Array).subarray(0, n * per),
    shape: [n, ...t.shape.slice(1)],
    dtype: 'float32',
  });
}
