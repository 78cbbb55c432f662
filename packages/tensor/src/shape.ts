import { InvalidArgumentError, ShapeError } from './errors.js';

export type Shape = readonly number[];

export function sizeOf(shape: Shape): number {
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}

export function contiguousStrides(shape: Shape): number[] {
  const strides = new Array<number>(shape.length);
  let s = 1;
  for (let i = shape.length - 1; i >= 0; i--) {
    strides[i] = s;
    s *= shape[i]!;
  }
  return strides;
}

export function shapesEqual(a: Shape, b: Shape): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** NumPy broadcasting of two or more shapes. */
export function broadcastShapes(...shapes: Shape[]): number[] {
  const ndim = Math.max(...shapes.map((s) => s.length));
  const out = new Array<number>(ndim).fill(1);
  for (const s of shapes) {
    for (let i = 0; i < s.length; i++) {
      const o = ndim - s.length + i;
      const d = s[i]!;
      if (out[o] === 1) out[o] = d;
      else if (d !== 1 && d !== out[o]) {
        throw new ShapeError(
          `shapes ${shapes.map((x) => `[${x.join(', ')}]`).join(' and ')} cannot be broadcast together ` +
            `(dimension ${o} is ${out[o]} in one and ${d} in another)`,
        );
      }
    }
  }
  return out;
}

/** Resolves a possibly negative axis against a rank, with a message naming the op. */
export function normalizeAxis(axis: number, ndim: number, op = 'op'): number {
  const a = axis < 0 ? axis + ndim : axis;
  if (!Number.isInteger(a) || a < 0 || a >= Math.max(ndim, 1)) {
    throw new InvalidArgumentError(`${op}: axis ${axis} is out of range for a tensor of rank ${ndim}`);
  }
  return a;
}

export function normalizeAxes(axes: number | readonly number[] | undefined, ndim: number, op = 'op'): number[] {
  if (axes === undefined) return Array.from({ length: ndim }, (_, i) => i);
  const list = typeof axes === 'number' ? [axes] : [...axes];
  const out = list.map((a) => normalizeAxis(a, ndim, op));
  if (new Set(out).size !== out.length) throw new InvalidArgumentError(`${op}: repeated axis in [${list.join(', ')}]`);
  return out.sort((x, y) => x - y);
}

/** Strides that read a tensor of `shape`/`strides` as if broadcast to `target` (0 on broadcast dims). */
export function broadcastStrides(shape: Shape, strides: readonly number[], target: Shape): number[] {
  const out = new Array<number>(target.length).fill(0);
  const lead = target.length - shape.length;
  for (let i = 0; i < shape.length; i++) {
    out[lead + i] = shape[i] === 1 && target[lead + i] !== 1 ? 0 : strides[i]!;
  }
  return out;
}
