import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadFashionMnist } from '@qtk/nn/node';
import type { Dataset } from './train.js';

/** The Fashion-MNIST subset committed with the repository (4,000 training and 2,000 test images, made by scripts/make-data-subset.ts). */
export const SUBSET_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'data', 'fashion-mnist-subset');

/** Where Debian's `dataset-fashion-mnist` package puts the full set. */
export const DEBIAN_FASHION_MNIST = '/usr/share/datasets/fashion-mnist';

/** The full dataset folder: the one given, else Debian's if installed, else null. */
export function resolveFullData(flag?: string): string | null {
  if (flag) return flag;
  return existsSync(join(DEBIAN_FASHION_MNIST, 'train-images-idx3-ubyte.gz')) ? DEBIAN_FASHION_MNIST : null;
}

export function loadDataset(dir: string, split: 'train' | 'test', limit?: number): Dataset {
  const { images, labels } = loadFashionMnist(dir, { split, limit });
  return { images, labels };
}
