import { allocate, Generator, InvalidArgumentError, Tensor, type TypedArray } from '@qtk/tensor';
import { z } from 'zod';
import { parseOptions, positiveInt } from '../options.js';

export interface DataLoaderOptions {
  batchSize: number;
  /** Visit samples in a new seeded random order every epoch (default false). */
  shuffle?: boolean;
  /** Skip the last batch when it is smaller than batchSize (default false). */
  dropLast?: boolean;
  /** Seed of the shuffling; epoch e's order depends only on (seed, e). */
  seed?: number;
}

const schema = z
  .object({
    batchSize: positiveInt,
    shuffle: z.boolean().default(false),
    dropLast: z.boolean().default(false),
    seed: z.number().int().default(0),
  })
  .strict();

/** Mixes seed and epoch into one 32-bit seed (so epochs are independent streams). */
function epochSeed(seed: number, epoch: number): number {
  let h = (seed ^ 0x2545f491) >>> 0;
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b) >>> 0;
  h = (h + Math.imul(epoch + 1, 0x9e3779b1)) >>> 0;
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35) >>> 0;
  return (h ^ (h >>> 16)) >>> 0;
}

/**
 * Batches over in-memory tensors that share their first dimension (e.g. images and labels).
 * Each `for (const [x, y] of loader)` is one epoch; with `shuffle` every epoch gets a new
 * permutation that depends only on the generator's seed and the epoch number.
 */
export class DataLoader implements Iterable<Tensor[]> {
  readonly tensors: Tensor[];
  readonly batchSize: number;
  readonly shuffle: boolean;
  readonly dropLast: boolean;
  readonly seed: number;
  /** Epoch the next iteration will run (incremented when one starts). */
  epoch = 0;
  private readonly rows: TypedArray[];
  private readonly rowSizes: number[];

  constructor(tensors: Tensor | Tensor[], options: DataLoaderOptions) {
    const o = parseOptions('DataLoader', schema, options);
    const list = Array.isArray(tensors) ? tensors : [tensors];
    if (list.length === 0 || list.some((t) => !(t instanceof Tensor) || t.ndim === 0)) {
      throw new InvalidArgumentError('DataLoader: expected one or more tensors with a leading sample dimension');
    }
    const n = list[0]!.shape[0]!;
    list.forEach((t, i) => {
      if (t.shape[0] !== n) {
        throw new InvalidArgumentError(
          `DataLoader: tensor ${i} has ${t.shape[0]} samples, tensor 0 has ${n}; all tensors need the same first dimension`,
        );
      }
    });
    this.tensors = list;
    this.batchSize = o.batchSize;
    this.shuffle = o.shuffle;
    this.dropLast = o.dropLast;
    this.seed = o.seed;
    this.rows = list.map((t) => t.values());
    this.rowSizes = list.map((t) => t.shape.slice(1).reduce((a, b) => a * b, 1));
  }

  /** Number of samples. */
  get size(): number {
    return this.tensors[0]!.shape[0]!;
  }

  /** Number of batches per epoch. */
  get length(): number {
    return this.dropLast ? Math.floor(this.size / this.batchSize) : Math.ceil(this.size / this.batchSize);
  }

  /** The sample order of `epoch`. */
  order(epoch: number): Int32Array {
    if (this.shuffle) return new Generator(epochSeed(this.seed, epoch)).permutation(this.size);
    const p = new Int32Array(this.size);
    for (let i = 0; i < p.length; i++) p[i] = i;
    return p;
  }

  /** The tensors' rows at `indices`, one new tensor per input tensor. */
  gather(indices: ArrayLike<number>): Tensor[] {
    const b = indices.length;
    return this.tensors.map((t, k) => {
      const src = this.rows[k]!;
      const row = this.rowSizes[k]!;
      const out = allocate(t.dtype, b * row);
      for (let j = 0; j < b; j++) {
        const s = indices[j]! * row;
        out.set(src.subarray(s, s + row), j * row);
      }
      return new Tensor({ data: out, shape: [b, ...t.shape.slice(1)], dtype: t.dtype });
    });
  }

  *[Symbol.iterator](): Iterator<Tensor[]> {
    const order = this.order(this.epoch++);
    const batches = this.length;
    for (let i = 0; i < batches; i++) {
      yield this.gather(order.subarray(i * this.batchSize, Math.min(order.length, (i + 1) * this.batchSize)));
    }
  }
}
