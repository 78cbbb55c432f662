// The import's allocation budget. The importer computes every value once on example inputs (that is
// how it learns static shapes and folds constants), so a tiny file declaring a huge input or folding
// a huge constant could otherwise make it allocate and compute without bound.
import { OnnxLimitError } from '../errors.js';

/** Default cap on the elements of any one tensor the import computes (2^25: 128 MiB of float32). */
export const DEFAULT_MAX_ELEMENTS = 2 ** 25;

/** All tensors the import computes together may hold this many times `maxElements`. */
export const TOTAL_FACTOR = 8;

/** The multiply-adds of convolutions and matrix products the import runs may reach this many times `maxElements`. */
export const WORK_FACTOR = 512;

const fmt = (shape: readonly number[]) => `[${shape.join(', ')}]`;

export class ImportLimits {
  private total = 0;
  private macs = 0;

  constructor(readonly maxElements: number) {}

  private advice(n: number): string {
    return `If the model is trusted, raise the cap: importOnnx(model, { maxElements: ${Math.min(Number.MAX_SAFE_INTEGER, Math.ceil(n))} }).`;
  }

  /** Element count of a shape, or Infinity when a dim is not a non-negative safe integer. */
  static count(shape: readonly number[]): number {
    let n = 1;
    for (const d of shape) {
      if (!Number.isSafeInteger(d) || d < 0) return Infinity;
      n *= d;
    }
    return n;
  }

  /** Throws before `what` would allocate a tensor (or a work buffer: `kind`) of `shape` larger than the cap. */
  check(what: string, shape: readonly number[], kind = 'a tensor'): void {
    const n = ImportLimits.count(shape);
    if (n <= this.maxElements) return;
    throw new OnnxLimitError(
      `importOnnx: ${what} would compute ${kind} of shape ${fmt(shape)} (${Number.isFinite(n) ? n : 'too many'} elements), ` +
        `more than maxElements = ${this.maxElements}. ${this.advice(n)}`,
    );
  }

  /** Counts a computed tensor against both the per-tensor cap and the total for the import. */
  spend(what: string, shape: readonly number[]): void {
    this.check(what, shape);
    this.total += ImportLimits.count(shape);
    const cap = TOTAL_FACTOR * this.maxElements;
    if (this.total > cap) {
      throw new OnnxLimitError(
        `importOnnx: at ${what}, the tensors computed while importing hold ${this.total} elements, more than ${TOTAL_FACTOR} × maxElements = ${cap}. ` +
          this.advice(Math.ceil(this.total / TOTAL_FACTOR)),
      );
    }
  }

  /** Counts the multiply-adds a convolution or matrix product will run, before it runs. */
  work(what: string, macs: number): void {
    this.macs += macs;
    const cap = WORK_FACTOR * this.maxElements;
    if (!(this.macs <= cap)) {
      throw new OnnxLimitError(
        `importOnnx: at ${what}, the convolutions and matrix products run while importing reach ${this.macs} multiply-adds, ` +
          `more than ${WORK_FACTOR} × maxElements = ${cap}. ` +
          this.advice(Math.ceil(this.macs / WORK_FACTOR)),
      );
    }
  }
}

/** The shape two shapes broadcast to (numpy rules), or null when they do not broadcast. */
export function broadcastShape(a: readonly number[], b: readonly number[]): number[] | null {
  const n = Math.max(a.length, b.length);
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const x = a[a.length - n + i] ?? 1;
    const y = b[b.length - n + i] ?? 1;
    if (x !== y && x !== 1 && y !== 1) return null;
    out.push(x === 1 ? y : x);
  }
  return out;
}
