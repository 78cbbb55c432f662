import { registerGradient } from '../autograd.js';
import { run1 } from '../dispatch.js';
import { InvalidArgumentError, ShapeError } from '../errors.js';
import { registerKernel } from '../registry.js';
import { normalizeAxis, sizeOf, type Shape } from '../shape.js';
import { Tensor } from '../tensor.js';

function view(x: Tensor, shape: Shape, strides: readonly number[], offset = x.offset): Tensor {
  return new Tensor({ data: x.data, shape, strides, offset, dtype: x.dtype });
}

/** Resolves one -1 in a target shape. */
export function inferShape(shape: readonly number[], size: number): number[] {
  const out = [...shape];
  const neg = out.indexOf(-1);
  if (neg >= 0) {
    if (out.indexOf(-1, neg + 1) >= 0)
      throw new ShapeError(`reshape: only one dimension may be -1, got [${shape.join(', ')}]`);
    const known = out.reduce((p, d, i) => (i === neg ? p : p * d), 1);
    if (known === 0 || size % known !== 0) {
      throw new ShapeError(`reshape: cannot infer -1 in [${shape.join(', ')}] for ${size} elements`);
    }
    out[neg] = size / known;
  }
  if (sizeOf(out) !== size) {
    throw new ShapeError(`reshape: a tensor of ${size} elements cannot have shape [${shape.join(', ')}]`);
  }
  return out;
}

registerKernel<(i: Tensor[], a: { shape: number[] }) => Tensor>({
  op: 'Reshape',
  backend: 'cpu',
  fn: ([x], { shape }) => {
    if (x!.isContiguous()) return view(x!, shape, shapeStrides(shape), x!.offset);
    return new Tensor({ data: x!.values(), shape, dtype: x!.dtype });
  },
});
registerGradient('Reshape', ({ inputs: [x] }, [g]) => [reshape(g!, x!.shape)]);

function shapeStrides(shape: Shape): number[] {
  const s = new Array<number>(shape.length);
  let acc = 1;
  for (let i = shape.length - 1; i >= 0; i--) {
    s[i] = acc;
    acc *= shape[i]!;
  }
  return s;
}

export function reshape(x: Tensor, shape: readonly number[]): Tensor {
  const target = inferShape(shape, x.size);
  return run1('Reshape', [x], { shape: target });
}

registerKernel<(i: Tensor[], a: { perm: number[] }) => Tensor>({
  op: 'Transpose',
  backend: 'cpu',
  fn: ([x], { perm }) =>
    view(
      x!,
      perm.map((p) => x!.shape[p]!),
      perm.map((p) => x!.strides[p]!),
    ),
});
registerGradient<{ perm: number[] }>('Transpose', ({ attrs: { perm } }, [g]) => {
  const inv = new Array<number>(perm.length);
  perm.forEach((p, i) => {
    inv[p] = i;
  });
  return [permute(g!, inv)];
});

/** Reorders dimensions (a view). */
export function permute(x: Tensor, perm: readonly number[]): Tensor {
  if (perm.length !== x.ndim) {
    throw new ShapeError(`permute: got ${perm.length} dimensions for a tensor of rank ${x.ndim}`);
  }
  const p = perm.map((a) => normalizeAxis(a, x.ndim, 'permute'));
  if (new Set(p).size !== p.length)
    throw new InvalidArgumentError(`permute: [${perm.join(', ')}] is not a permutation`);
  return run1('Transpose', [x], { perm: p });
}

/** Swaps two dimensions (a view); defaults to the last two. */
export function transpose(x: Tensor, dim0 = -2, dim1 = -1): Tensor {
  const perm = Array.from({ length: x.ndim }, (_, i) => i);
  const a = normalizeAxis(dim0, x.ndim, 'transpose');
  const b = normalizeAxis(dim1, x.ndim, 'transpose');
  perm[a] = b;
  perm[b] = a;
  return permute(x, perm);
}

registerKernel<(i: Tensor[], a: { shape: number[] }) => Tensor>({
  op: 'Expand',
  backend: 'cpu',
  fn: ([x], { shape }) => {
    const lead = shape.length - x!.ndim;
    const strides = shape.map((d, i) => {
      if (i < lead) return 0;
      const sd = x!.shape[i - lead]!;
      return sd === 1 && d !== 1 ? 0 : x!.strides[i - lead]!;
    });
    return view(x!, shape, strides);
  },
});
registerGradient('Expand', ({ inputs: [x] }, [g]) => [g!.sumTo(x!.shape)]);

/** Broadcasts to `shape` without copying (-1 keeps a dimension). */
export function expand(x: Tensor, shape: readonly number[]): Tensor {
  if (shape.length < x.ndim) {
    throw new ShapeError(`expand: target [${shape.join(', ')}] has fewer dimensions than [${x.shape.join(', ')}]`);
  }
  const lead = shape.length - x.ndim;
  const target = shape.map((d, i) => (d === -1 && i >= lead ? x.shape[i - lead]! : d));
  for (let i = 0; i < x.ndim; i++) {
    const s = x.shape[i]!;
    if (s !== 1 && s !== target[lead + i]) {
      throw new ShapeError(`expand: cannot expand [${x.shape.join(', ')}] to [${shape.join(', ')}]`);
    }
  }
  return run1('Expand', [x], { shape: target });
}

registerKernel<(i: Tensor[], a: Record<string, never>) => Tensor>({
  op: 'Contiguous',
  backend: 'cpu',
  fn: ([x]) => new Tensor({ data: x!.values().slice(), shape: x!.shape, dtype: x!.dtype }),
});
registerGradient('Contiguous', (_c, [g]) => [g!]);

/** A contiguous copy (recorded by autograd). */
export function contiguous(x: Tensor): Tensor {
  if (x.isContiguous() && x.offset === 0 && x.data.length === x.size) return x;
  return run1('Contiguous', [x], {});
}
