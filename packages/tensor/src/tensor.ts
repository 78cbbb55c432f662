import ndarray from 'ndarray';
import ops from 'ndarray-ops';
import { allocate, type DType, type TypedArray } from './dtype.js';
import { ShapeError } from './errors.js';
import { contiguousStrides, sizeOf, type Shape } from './shape.js';
import type { GradNode } from './autograd.js';

export interface TensorInit {
  data: TypedArray;
  shape: Shape;
  dtype: DType;
  strides?: readonly number[];
  offset?: number;
  requiresGrad?: boolean;
}

/**
 * An n-dimensional array over a typed-array storage, viewed through shape, strides and offset
 * (an ndarray view; `nd` exposes it). Tensors are immutable from the op API's point of view;
 * optimizers and observers may write into `data` of contiguous leaf tensors under `noGrad`.
 */
export class Tensor {
  readonly data: TypedArray;
  readonly shape: readonly number[];
  readonly strides: readonly number[];
  readonly offset: number;
  readonly dtype: DType;
  requiresGrad: boolean;
  /** Accumulated gradient of a leaf after `backward()`. */
  grad: Tensor | null = null;
  /** The autograd node that produced this tensor (null for leaves). */
  gradFn: GradNode | null = null;
  /** Which output of `gradFn` this tensor is. */
  outputIndex = 0;
  /** Free-form label used in error messages and graph dumps. */
  name?: string;

  constructor(init: TensorInit) {
    this.data = init.data;
    this.shape = Object.freeze([...init.shape]);
    this.strides = Object.freeze(init.strides ? [...init.strides] : contiguousStrides(init.shape));
    this.offset = init.offset ?? 0;
    this.dtype = init.dtype;
    this.requiresGrad = init.requiresGrad ?? false;
    if (!init.strides && this.offset + sizeOf(this.shape) > this.data.length) {
      throw new ShapeError(
        `storage of ${this.data.length} elements is too small for shape [${this.shape.join(', ')}] (${sizeOf(this.shape)} elements)`,
      );
    }
  }

  get ndim(): number {
    return this.shape.length;
  }

  get size(): number {
    return sizeOf(this.shape);
  }

  /** True when elements are laid out row-major from `offset` with no gaps. */
  isContiguous(): boolean {
    let expected = 1;
    for (let i = this.shape.length - 1; i >= 0; i--) {
      const d = this.shape[i]!;
      if (d !== 1 && this.strides[i] !== expected) return false;
      expected *= d;
    }
    return true;
  }

  /** An ndarray view on the same storage. */
  get nd(): ndarray.NdArray<TypedArray> {
    return ndarray(this.data, [...this.shape], [...this.strides], this.offset);
  }

  /** The elements in row-major order as a typed array; shares storage when already contiguous and unsliced. */
  values(): TypedArray {
    if (this.isContiguous()) {
      const n = this.size;
      if (this.offset === 0 && this.data.length === n) return this.data;
      return this.data.subarray(this.offset, this.offset + n) as TypedArray;
    }
    const out = allocate(this.dtype, this.size);
    if (this.size > 0) ops.assign(ndarray(out, [...this.shape]), this.nd);
    return out;
  }

  /** A contiguous tensor with the same values (itself if already contiguous). Not recorded by autograd. */
  contiguousData(): Tensor {
    if (this.isContiguous() && this.offset === 0) return this;
    return new Tensor({ data: this.values(), shape: this.shape, dtype: this.dtype });
  }

  /** Row-major copy as a plain number array. */
  toArray(): number[] {
    return Array.from(this.values());
  }

  /** The single value of a one-element tensor. */
  item(): number {
    if (this.size !== 1)
      throw new ShapeError(`item() needs a tensor with one element, got shape [${this.shape.join(', ')}]`);
    return this.data[this.offset]!;
  }

  /** Element at a multi-index (negative indices count from the end). */
  at(...index: number[]): number {
    if (index.length !== this.ndim) throw new ShapeError(`at(): expected ${this.ndim} indices, got ${index.length}`);
    let p = this.offset;
    for (let i = 0; i < index.length; i++) {
      const d = this.shape[i]!;
      const k = index[i]! < 0 ? index[i]! + d : index[i]!;
      if (k < 0 || k >= d) throw new ShapeError(`at(): index ${index[i]} out of range for dimension ${i} of size ${d}`);
      p += k * this.strides[i]!;
    }
    return this.data[p]!;
  }

  /** A new leaf sharing storage, cut from the graph. */
  detach(): Tensor {
    return new Tensor({
      data: this.data,
      shape: this.shape,
      strides: this.strides,
      offset: this.offset,
      dtype: this.dtype,
    });
  }

  /** A contiguous copy that owns its storage, cut from the graph. */
  clone(): Tensor {
    const v = this.values();
    return new Tensor({ data: v.slice() as TypedArray, shape: this.shape, dtype: this.dtype });
  }

  /** Marks a leaf as needing gradients (returns this). */
  requiresGrad_(value = true): this {
    this.requiresGrad = value;
    return this;
  }

  toString(): string {
    const vals =
      this.size <= 16
        ? `[${this.toArray()
            .map((v) => +v.toFixed(4))
            .join(', ')}]`
        : `${this.size} values`;
    return `Tensor(${this.dtype}, [${this.shape.join(', ')}], ${vals})`;
  }
}
