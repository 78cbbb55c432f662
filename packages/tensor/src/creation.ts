import { allocate, castArray, type DType, type TypedArray, dtypeOfArray } from './dtype.js';
import { ShapeError } from './errors.js';
import { defaultGenerator, type Generator } from './random.js';
import { sizeOf, type Shape } from './shape.js';
import { Tensor } from './tensor.js';

export interface CreateOptions {
  dtype?: DType;
  requiresGrad?: boolean;
}

type Nested = number | boolean | Nested[];

function inferShape(value: Nested): number[] {
  const shape: number[] = [];
  let v: Nested = value;
  while (Array.isArray(v)) {
    shape.push(v.length);
    v = v[0] as Nested;
  }
  return shape;
}

function flatten(value: Nested, shape: number[], depth: number, out: number[]): void {
  if (depth === shape.length) {
    if (Array.isArray(value)) throw new ShapeError('ragged nested array: every row must have the same length');
    out.push(Number(value));
    return;
  }
  if (!Array.isArray(value) || value.length !== shape[depth]) {
    throw new ShapeError(`ragged nested array at depth ${depth}: expected ${shape[depth]} elements`);
  }
  for (const v of value) flatten(v, shape, depth + 1, out);
}

/** A tensor from a (nested) array, a typed array or a number. */
export function tensor(
  value: Nested | TypedArray | ArrayLike<number>,
  shapeOrOptions?: Shape | CreateOptions,
  options?: CreateOptions,
): Tensor {
  let shape: Shape | undefined;
  let opts: CreateOptions = {};
  if (Array.isArray(shapeOrOptions)) {
    shape = shapeOrOptions as Shape;
    opts = options ?? {};
  } else if (shapeOrOptions) {
    opts = shapeOrOptions as CreateOptions;
  }
  let data: TypedArray;
  if (ArrayBuffer.isView(value)) {
    const arr = value as TypedArray;
    const dtype = opts.dtype ?? dtypeOfArray(arr);
    data = dtype === dtypeOfArray(arr) ? arr : castArray(arr, dtype);
    shape = shape ?? [arr.length];
    return new Tensor({ data, shape, dtype, requiresGrad: opts.requiresGrad });
  }
  const dtype = opts.dtype ?? 'float32';
  if (typeof value === 'number' || typeof value === 'boolean') {
    data = castArray([Number(value)], dtype);
    return new Tensor({ data, shape: shape ?? [], dtype, requiresGrad: opts.requiresGrad });
  }
  const nested = value as Nested;
  const inferred = Array.isArray(nested) && !Array.isArray(nested[0]) && shape ? [nested.length] : inferShape(nested);
  const flat: number[] = [];
  flatten(nested, inferred, 0, flat);
  shape = shape ?? inferred;
  if (sizeOf(shape) !== flat.length) {
    throw new ShapeError(`${flat.length} values cannot fill shape [${shape.join(', ')}]`);
  }
  return new Tensor({ data: castArray(flat, dtype), shape, dtype, requiresGrad: opts.requiresGrad });
}

export function scalar(value: number, dtype: DType = 'float32'): Tensor {
  return tensor(value, { dtype });
}

export function full(shape: Shape, value: number, options: CreateOptions = {}): Tensor {
  const dtype = options.dtype ?? 'float32';
  const data = allocate(dtype, sizeOf(shape));
  if (value !== 0) data.fill(value);
  return new Tensor({ data, shape, dtype, requiresGrad: options.requiresGrad });
}

export function zeros(shape: Shape, options: CreateOptions = {}): Tensor {
  return full(shape, 0, options);
}

export function ones(shape: Shape, options: CreateOptions = {}): Tensor {
  return full(shape, 1, options);
}

export function zerosLike(t: Tensor, options: CreateOptions = {}): Tensor {
  return full(t.shape, 0, { dtype: t.dtype, ...options });
}

export function onesLike(t: Tensor, options: CreateOptions = {}): Tensor {
  return full(t.shape, 1, { dtype: t.dtype, ...options });
}

export function arange(start: number, stop?: number, step = 1, options: CreateOptions = {}): Tensor {
  if (stop === undefined) {
    stop = start;
    start = 0;
  }
  const n = Math.max(0, Math.ceil((stop - start) / step));
  const dtype = options.dtype ?? 'float32';
  const data = allocate(dtype, n);
  for (let i = 0; i < n; i++) data[i] = start + i * step;
  return new Tensor({ data, shape: [n], dtype, requiresGrad: options.requiresGrad });
}

export interface RandomOptions extends CreateOptions {
  generator?: Generator;
}

/** Uniform in [low, high). */
export function rand(shape: Shape, options: RandomOptions & { low?: number; high?: number } = {}): Tensor {
  const g = options.generator ?? defaultGenerator;
  const low = options.low ?? 0;
  const high = options.high ?? 1;
  const data = new Float32Array(sizeOf(shape));
  for (let i = 0; i < data.length; i++) data[i] = low + (high - low) * g.uniform();
  return new Tensor({ data, shape, dtype: 'float32', requiresGrad: options.requiresGrad });
}

/** Normal with the given mean and std. */
export function randn(shape: Shape, options: RandomOptions & { mean?: number; std?: number } = {}): Tensor {
  const g = options.generator ?? defaultGenerator;
  const mean = options.mean ?? 0;
  const std = options.std ?? 1;
  const data = new Float32Array(sizeOf(shape));
  for (let i = 0; i < data.length; i++) data[i] = mean + std * g.normal();
  return new Tensor({ data, shape, dtype: 'float32', requiresGrad: options.requiresGrad });
}

/** Uniform integers in [low, high). */
export function randint(low: number, high: number, shape: Shape, options: RandomOptions = {}): Tensor {
  const g = options.generator ?? defaultGenerator;
  const dtype = options.dtype ?? 'int32';
  const data = allocate(dtype, sizeOf(shape));
  for (let i = 0; i < data.length; i++) data[i] = low + g.int(high - low);
  return new Tensor({ data, shape, dtype });
}
