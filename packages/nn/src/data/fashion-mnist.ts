import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { InvalidArgumentError, Tensor } from '@qtk/tensor';
import { z } from 'zod';
import { DatasetNotFoundError, DataFormatError } from '../errors.js';
import { parseOptions } from '../options.js';
import { readIdx } from './idx.js';

export const FASHION_MNIST_CLASSES = [
  'T-shirt/top',
  'Trouser',
  'Pullover',
  'Dress',
  'Coat',
  'Sandal',
  'Shirt',
  'Sneaker',
  'Bag',
  'Ankle boot',
] as const;

export interface FashionMnistOptions {
  split?: 'train' | 'test';
  /** Keep only the first `limit` samples. */
  limit?: number;
}

export interface FashionMnist {
  /** [N, 1, 28, 28] float32, normalised as (pixel/255 − 0.5)/0.5 ∈ [−1, 1]. */
  images: Tensor;
  /** [N] int32 class indices 0..9. */
  labels: Tensor;
}

const schema = z
  .object({ split: z.enum(['train', 'test']).default('train'), limit: z.number().int().positive().optional() })
  .strict();

const EXPECTED_FILES =
  'train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte (each plain or .gz)';

function locate(dir: string, base: string): string {
  for (const name of [`${base}.gz`, base]) {
    const p = join(dir, name);
    if (existsSync(p)) return p;
  }
  throw new DatasetNotFoundError(
    `loadFashionMnist: ${join(dir, base)}(.gz) not found; the directory must hold ${EXPECTED_FILES} (from https://github.com/zalandoresearch/fashion-mnist)`,
    join(dir, base),
  );
}

// Same float32 arithmetic as numpy's (x.astype(float32) / 255 - 0.5) / 0.5.
const NORMALISED = new Float32Array(256);
for (let p = 0; p < 256; p++) NORMALISED[p] = Math.fround(Math.fround(Math.fround(p / 255) - 0.5) / 0.5);

/** Loads a Fashion-MNIST split from the four IDX files in `dir`. */
export function loadFashionMnist(dir: string, options: FashionMnistOptions = {}): FashionMnist {
  const o = parseOptions('loadFashionMnist', schema, options);
  if (!existsSync(dir)) {
    throw new DatasetNotFoundError(
      `loadFashionMnist: directory ${dir} does not exist; it must hold ${EXPECTED_FILES}`,
      dir,
    );
  }
  const prefix = o.split === 'train' ? 'train' : 't10k';
  const imgPath = locate(dir, `${prefix}-images-idx3-ubyte`);
  const lblPath = locate(dir, `${prefix}-labels-idx1-ubyte`);
  const img = readIdx(imgPath);
  const lbl = readIdx(lblPath);
  if (img.dtype !== 'uint8' || img.shape.length !== 3 || img.shape[1] !== 28 || img.shape[2] !== 28) {
    throw new DataFormatError(
      `expected uint8 images of shape [N, 28, 28], got ${img.dtype} [${img.shape.join(', ')}]`,
      imgPath,
    );
  }
  if (lbl.dtype !== 'uint8' || lbl.shape.length !== 1 || lbl.shape[0] !== img.shape[0]) {
    throw new DataFormatError(
      `expected ${img.shape[0]} uint8 labels, got ${lbl.dtype} [${lbl.shape.join(', ')}]`,
      lblPath,
    );
  }
  const n = Math.min(img.shape[0]!, o.limit ?? Infinity);
  const px = img.data as Uint8Array;
  const images = new Float32Array(n * 784);
  for (let i = 0; i < images.length; i++) images[i] = NORMALISED[px[i]!]!;
  const labels = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    const v = lbl.data[i]!;
    if (v > 9) throw new DataFormatError(`label ${i} is ${v}; Fashion-MNIST has classes 0..9`, lblPath);
    labels[i] = v;
  }
  if (n === 0) throw new InvalidArgumentError(`loadFashionMnist: ${imgPath} holds no images`);
  return {
    images: new Tensor({ data: images, shape: [n, 1, 28, 28], dtype: 'float32' }),
    labels: new Tensor({ data: labels, shape: [n], dtype: 'int32' }),
  };
}
