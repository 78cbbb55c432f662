import { registerGradient } from '../autograd.js';
import { run1 } from '../dispatch.js';
import { allocate } from '../dtype.js';
import { InvalidArgumentError, ShapeError } from '../errors.js';
import { registerKernel } from '../registry.js';
import { contiguousStrides } from '../shape.js';
import type { Tensor } from '../tensor.js';
import { shapeStr } from './conv-args.js';
import { f32, make } from './util.js';

export type PadMode = 'constant' | 'reflect' | 'replicate';

/** Pad amounts per dimension in dim order (not F.pad's last-dim-first order); negative crops (constant mode). */
export interface PadAttrs {
  begin: number[];
  end: number[];
  mode: PadMode;
  value: number;
}

/** For each output index along one dim, the input index it reads, or −1 for the constant fill. */
function sourceMap(size: number, begin: number, end: number, mode: PadMode): Int32Array {
  const out = new Int32Array(size + begin + end);
  for (let o = 0; o < out.length; o++) {
    let i = o - begin;
    if (mode === 'constant') {
      if (i < 0 || i >= size) i = -1;
    } else if (mode === 'reflect') {
      if (i < 0) i = -i;
      if (i >= size) i = 2 * (size - 1) - i;
    } else {
      i = i < 0 ? 0 : i >= size ? size - 1 : i;
    }
    out[o] = i;
  }
  return out;
}

/**
 * Calls visit(outIndex, inIndex) for every output element, with inIndex −1 where the constant applies.
 * Walks output rows with an odometer; the last dim goes through its map in a tight loop.
 */
function forEachSource(shape: readonly number[], a: PadAttrs, visit: (o: number, i: number) => void): number[] {
  const nd = shape.length;
  const maps = shape.map((s, d) => sourceMap(s, a.begin[d]!, a.end[d]!, a.mode));
  const outShape = maps.map((m) => m.length);
  const inStrides = contiguousStrides(shape);
  if (outShape.some((d) => d === 0)) return outShape;
  if (nd === 0) {
    visit(0, 0);
    return outShape;
  }
  const last = maps[nd - 1]!;
  const rowLen = last.length;
  const rows = outShape.slice(0, -1).reduce((p, d) => p * d, 1);
  const idx = new Array<number>(nd - 1).fill(0);
  for (let r = 0, o = 0; r < rows; r++) {
    let base = 0;
    for (let d = 0; d < nd - 1; d++) {
      const s = maps[d]![idx[d]!]!;
      if (s < 0) {
        base = -1;
        break;
      }
      base += s * inStrides[d]!;
    }
    if (base < 0) {
      for (let j = 0; j < rowLen; j++) visit(o++, -1);
    } else {
      for (let j = 0; j < rowLen; j++) {
        const s = last[j]!;
        visit(o++, s < 0 ? -1 : base + s);
      }
    }
    for (let d = nd - 2; d >= 0; d--) {
      if (++idx[d]! < outShape[d]!) break;
      idx[d] = 0;
    }
  }
  return outShape;
}

function outShapeOf(shape: readonly number[], a: PadAttrs): number[] {
  return shape.map((s, d) => s + a.begin[d]! + a.end[d]!);
}

registerKernel<(i: Tensor[], a: PadAttrs) => Tensor>({
  op: 'Pad',
  backend: 'cpu',
  fn: ([x], attrs) => {
    const xv = x!.values();
    const out = allocate(
      x!.dtype,
      outShapeOf(x!.shape, attrs).reduce((p, d) => p * d, 1),
    );
    const fill = attrs.value;
    const shape = forEachSource(x!.shape, attrs, (o, i) => {
      out[o] = i < 0 ? fill : xv[i]!;
    });
    return make(out, shape, x!.dtype);
  },
});

registerGradient<PadAttrs>('Pad', ({ inputs: [x], attrs }, [g]) => {
  const gv = f32(g!);
  const dx = new Float32Array(x!.size);
  forEachSource(x!.shape, attrs, (o, i) => {
    if (i >= 0) dx[i]! += gv[o]!;
  });
  return [make(dx, x!.shape)];
});

/**
 * Pads (or, with negative amounts in constant mode, crops) trailing dims. `pads` follows F.pad:
 * [lastBegin, lastEnd, secondLastBegin, secondLastEnd, ...]. 'reflect' mirrors without repeating
 * the edge (pads must be smaller than the dim); 'replicate' repeats the edge.
 */
export function pad(x: Tensor, pads: readonly number[], mode: PadMode = 'constant', value = 0): Tensor {
  if (mode !== 'constant' && mode !== 'reflect' && mode !== 'replicate') {
    throw new InvalidArgumentError(`pad: mode must be 'constant', 'reflect' or 'replicate', got '${String(mode)}'`);
  }
  if (pads.length % 2 !== 0 || pads.length > 2 * x.ndim) {
    throw new InvalidArgumentError(
      `pad: pads must hold a (begin, end) pair per padded dim, at most ${x.ndim} pairs for input ${shapeStr(x.shape)}; got [${pads.join(', ')}]`,
    );
  }
  if (!pads.every(Number.isInteger))
    throw new InvalidArgumentError(`pad: pads must be integers, got [${pads.join(', ')}]`);
  const begin = new Array<number>(x.ndim).fill(0);
  const end = new Array<number>(x.ndim).fill(0);
  for (let k = 0; k < pads.length / 2; k++) {
    const d = x.ndim - 1 - k;
    begin[d] = pads[2 * k]!;
    end[d] = pads[2 * k + 1]!;
    const size = x.shape[d]!;
    if (mode === 'constant') {
      if (size + begin[d]! + end[d]! < 0) {
        throw new ShapeError(
          `pad: pads (${begin[d]}, ${end[d]}) crop more than the ${size} elements of dim ${d} of ${shapeStr(x.shape)}`,
        );
      }
      continue;
    }
    if (begin[d]! < 0 || end[d]! < 0) {
      throw new InvalidArgumentError(
        `pad: negative pads crop only in 'constant' mode; got (${begin[d]}, ${end[d]}) for dim ${d} in '${mode}' mode`,
      );
    }
    if ((begin[d]! > 0 || end[d]! > 0) && size === 0) {
      throw new ShapeError(`pad: '${mode}' padding needs a non-empty dim ${d} in ${shapeStr(x.shape)}`);
    }
    if (mode === 'reflect' && (begin[d]! >= size || end[d]! >= size)) {
      throw new ShapeError(
        `pad: 'reflect' pads must be smaller than the dim they pad; got (${begin[d]}, ${end[d]}) for dim ${d} of size ${size} in ${shapeStr(x.shape)}`,
      );
    }
  }
  return run1<PadAttrs>('Pad', [x], { begin, end, mode, value });
}
