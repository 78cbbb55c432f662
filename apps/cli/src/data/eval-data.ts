import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { loadFashionMnist } from '@qtk/nn/node';
import type { Tensor } from '@qtk/tensor';
import { listSampleFiles, loadSamples, readLabels, type Preprocess } from './samples.js';

export interface EvalData {
  /** [N, ...] float32 inputs. */
  readonly inputs: Tensor;
  readonly labels: Int32Array;
  /** How the data was read, for the report. */
  readonly source: string;
}

/** Whether `dir` holds Fashion-MNIST-style IDX files of this split. */
export function hasIdx(dir: string, split: 'train' | 'test'): boolean {
  const base = `${split === 'train' ? 'train' : 't10k'}-images-idx3-ubyte`;
  return existsSync(join(dir, base)) || existsSync(join(dir, `${base}.gz`));
}

/**
 * An evaluation set: the IDX files of `dir` (Fashion-MNIST layout, images normalised to [-1, 1] as
 * (pixel/255 − 0.5)/0.5), or else its .npy / image files with a labels file (one integer class
 * per line, in sorted file-name order; rows of a batched .npy in order).
 */
export function loadEvalData(
  dir: string,
  o: {
    split: 'train' | 'test';
    labels?: string;
    sampleShape: () => (number | null)[];
    preprocess: Preprocess;
    limit?: number;
  },
): EvalData {
  if (hasIdx(dir, o.split) && o.labels === undefined) {
    const d = loadFashionMnist(dir, { split: o.split, ...(o.limit !== undefined ? { limit: o.limit } : {}) });
    return { inputs: d.images, labels: d.labels.values() as Int32Array, source: `IDX ${o.split} split in ${dir}` };
  }
  const files = listSampleFiles(dir, 'data');
  const labelsFile = o.labels ?? join(dir, 'labels.txt');
  const s = loadSamples(files, o.sampleShape(), o.preprocess);
  const labels = readLabels(labelsFile, s.tensor.shape[0]!);
  const n = Math.min(s.tensor.shape[0]!, o.limit ?? Infinity);
  const inputs = n === s.tensor.shape[0] ? s.tensor : sliceRows(s.tensor, n);
  return {
    inputs,
    labels: labels.subarray(0, n),
    source: `${s.files.length} file(s) in ${dir}, labels from ${labelsFile}`,
  };
}

/**
 * Inputs without labels (qtk compare): the IDX images of `dir` as loadEvalData reads them, or its
 * .npy / image files in sorted file-name order; no labels file is needed.
 */
export function loadInputData(
  dir: string,
  o: { split: 'train' | 'test'; sampleShape: () => (number | null)[]; preprocess: Preprocess; limit?: number },
): { inputs: Tensor; source: string } {
  if (hasIdx(dir, o.split)) {
    const d = loadFashionMnist(dir, { split: o.split, ...(o.limit !== undefined ? { limit: o.limit } : {}) });
    return { inputs: d.images, source: `IDX ${o.split} split in ${dir}` };
  }
  const s = loadSamples(listSampleFiles(dir, 'data'), o.sampleShape(), o.preprocess, o.limit ?? Infinity);
  return { inputs: s.tensor, source: `${s.files.length} file(s) in ${dir}` };
}

function sliceRows(t: Tensor, n: number): Tensor {
  const per = t.shape.slice(1).reduce((p, d) => p * d, 1);
  return new (t.constructor as typeof Tensor)({
    data: (t.values() as Float32Array).subarray(0, n * per),
    shape: [n, ...t.shape.slice(1)],
    dtype: 'float32',
  });
}
