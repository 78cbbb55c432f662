import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { type FashionMnist, fashionMnistFromIdx } from '../data/fashion-mnist.js';
import { DatasetNotFoundError } from '../errors.js';
import { parseOptions } from '../options.js';
import { readIdx } from './read-idx.js';

export interface FashionMnistOptions {
  split?: 'train' | 'test';
  /** Keep only the first `limit` samples. */
  limit?: number;
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
  const images = locate(dir, `${prefix}-images-idx3-ubyte`);
  const labels = locate(dir, `${prefix}-labels-idx1-ubyte`);
  return fashionMnistFromIdx(readIdx(images), readIdx(labels), {
    ...(o.limit !== undefined ? { limit: o.limit } : {}),
    sources: { images, labels },
  });
}
