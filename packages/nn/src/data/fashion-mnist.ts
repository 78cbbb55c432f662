import { InvalidArgumentError, Tensor } from '@qtk/tensor';
import { z } from 'zod';
import { DataFormatError } from '../errors.js';
import { parseOptions } from '../options.js';
import type { IdxArray } from './idx.js';

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

export interface FashionMnist {
  /** [N, 1, 28, 28] float32, normalised as (pixel/255 − 0.5)/0.5 ∈ [−1, 1]. */
  images: Tensor;
  /** [N] int32 class indices 0..9. */
  labels: Tensor;
}

export interface FashionMnistIdxOptions {
  /** Keep only the first `limit` samples. */
  limit?: number;
  /** Names of the images and labels files in errors (default 'images' and 'labels'). */
  sources?: { images?: string; labels?: string };
}

const schema = z
  .object({
    limit: z.number().int().positive().optional(),
    sources: z.object({ images: z.string().optional(), labels: z.string().optional() }).strict().optional(),
  })
  .strict();

// Same float32 arithmetic as numpy's (x.astype(float32) / 255 - 0.5) / 0.5.
const NORMALISED = new Float32Array(256);
for (let p = 0; p < 256; p++) NORMALISED[p] = Math.fround(Math.fround(Math.fround(p / 255) - 0.5) / 0.5);

/**
 * A Fashion-MNIST split from its two parsed IDX files (parseIdx of the inflated bytes): uint8 images of
 * shape [N, 28, 28] and N uint8 labels 0..9.
 */
export function fashionMnistFromIdx(
  images: IdxArray,
  labels: IdxArray,
  options: FashionMnistIdxOptions = {},
): FashionMnist {
  const o = parseOptions('fashionMnistFromIdx', schema, options);
  const imagesSource = o.sources?.images ?? 'images';
  const labelsSource = o.sources?.labels ?? 'labels';
  if (images.dtype !== 'uint8' || images.shape.length !== 3 || images.shape[1] !== 28 || images.shape[2] !== 28) {
    throw new DataFormatError(
      `expected uint8 images of shape [N, 28, 28], got ${images.dtype} [${images.shape.join(', ')}]`,
      imagesSource,
    );
  }
  if (labels.dtype !== 'uint8' || labels.shape.length !== 1 || labels.shape[0] !== images.shape[0]) {
    throw new DataFormatError(
      `expected ${images.shape[0]} uint8 labels, got ${labels.dtype} [${labels.shape.join(', ')}]`,
      labelsSource,
    );
  }
  const n = Math.min(images.shape[0]!, o.limit ?? Infinity);
  const px = images.data as Uint8Array;
  const pixels = new Float32Array(n * 784);
  for (let i = 0; i < pixels.length; i++) pixels[i] = NORMALISED[px[i]!]!;
  const classes = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    const v = labels.data[i]!;
    if (v > 9) throw new DataFormatError(`label ${i} is ${v}; Fashion-MNIST has classes 0..9`, labelsSource);
    classes[i] = v;
  }
  if (n === 0) throw new InvalidArgumentError(`fashionMnistFromIdx: ${imagesSource} holds no images`);
  return {
    images: new Tensor({ data: pixels, shape: [n, 1, 28, 28], dtype: 'float32' }),
    labels: new Tensor({ data: classes, shape: [n], dtype: 'int32' }),
  };
}
