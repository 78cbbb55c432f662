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

/**
 * The folder a script's `--data` names: `debian` for Debian's full set (exits with status 2 and the install hint
 * when it is missing), another folder as given, or the committed subset when absent. `full` is null for the subset.
 */
export function dataDirOf(flag: string | undefined): { dir: string; full: string | null } {
  const full = flag === 'debian' ? resolveFullData() : (flag ?? null);
  if (flag === 'debian' && !full) {
    console.error(
      `error: --data debian: ${DEBIAN_FASHION_MNIST} not found; apt-get install dataset-fashion-mnist or pass --data DIR`,
    );
    process.exit(2);
  }
  return { dir: full ?? SUBSET_DIR, full };
}

export function loadDataset(dir: string, split: 'train' | 'test', limit?: number): Dataset {
  const { images, labels } = loadFashionMnist(dir, { split, limit });
  return { images, labels };
}
