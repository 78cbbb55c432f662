import { run1 } from '../dispatch.js';
import { DTypeError, ShapeError } from '../errors.js';
import { registerKernel, type Saved } from '../registry.js';
import { Tensor } from '../tensor.js';
import { perDim, shapeStr } from './conv-args.js';
import { convPlan, type ConvAttrs } from './conv.js';
import {
  requantizeAttrs,
  requantizeInt32Values,
  type RequantizeInt32Attrs,
  type RequantizeInt32Options,
} from './requantize-int32.js';
import { make } from './util.js';

// ConvInteger (ONNX's name; zero points are 0 here): x [N, Cin, ...] int8/int16 and
// w [Cout, Cin/groups, ...kernel] int8/int16 give int32 [N, Cout, ...] = Σ x·w computed in int32,
// wrapping modulo 2^32 like any int32 addition. Wrapping sums do not depend on the order of the
// additions, so every backend gives the same bits; a caller that needs the exact sum bounds
// Σ|x·w| below 2^31 first. The cpu kernel is the reference: direct loops, no float on the way.
// An optional epilogue (RequantizeInt32 over [N, Cout, P], with an optional third input, the fused
// add's) turns the sums into int8/int16/int32 outputs inside the kernel, so a backend can apply it
// while the sums are still in its memory.

/** ConvInteger's attributes: the conv's, and the epilogue (channels = Cout, inner = output positions). */
export type ConvIntegerAttrs = ConvAttrs & { epilogue?: RequantizeInt32Attrs };

const INT_DTYPES = new Set(['int8', 'int16']);

registerKernel<(i: Tensor[], a: ConvIntegerAttrs, s: Saved) => Tensor>({
  op: 'ConvInteger',
  backend: 'cpu',
  fn: ([x, w, other], attrs) => {
    const pl = convPlan(x!, w!, attrs);
    const g = pl.geom;
    const xv = x!.values();
    const wv = w!.values();
    const cinG = g.c / attrs.groups;
    const { coutG, p } = pl;
    const kvol = g.kd * g.kh * g.kw;
    const plane = g.id * g.ih * g.iw;
    const y = new Int32Array(g.n * pl.cout * p);
    let j = 0;
    for (let b = 0; b < g.n; b++) {
      for (let co = 0; co < pl.cout; co++) {
        const grp = Math.floor(co / coutG);
        for (let z = 0; z < g.od; z++)
          for (let yy = 0; yy < g.oh; yy++)
            for (let xx = 0; xx < g.ow; xx++) {
              let s = 0;
              for (let ci = 0; ci < cinG; ci++) {
                const xBase = (b * g.c + grp * cinG + ci) * plane;
                const wBase = (co * cinG + ci) * kvol;
                for (let a = 0; a < g.kd; a++) {
                  const zi = z * g.sd - g.pd + a * g.dd;
                  if (zi < 0 || zi >= g.id) continue;
                  for (let e = 0; e < g.kh; e++) {
                    const yi = yy * g.sh - g.ph + e * g.dh;
                    if (yi < 0 || yi >= g.ih) continue;
                    for (let f = 0; f < g.kw; f++) {
                      const xi = xx * g.sw - g.pw + f * g.dw;
                      if (xi < 0 || xi >= g.iw) continue;
                      s =
                        (s +
                          Math.imul(
                            xv[xBase + (zi * g.ih + yi) * g.iw + xi]!,
                            wv[wBase + (a * g.kh + e) * g.kw + f]!,
                          )) |
                        0;
                    }
                  }
                }
              }
              y[j++] = s;
            }
      }
    }
    const shape = [g.n, pl.cout, ...pl.out];
    const epi = attrs.epilogue;
    return epi
      ? make(requantizeInt32Values(y, other ? other.values() : null, epi), shape, epi.outDtype)
      : make(y, shape, 'int32');
  },
});

/** Options of convInteger: as conv, with explicit padding per side or one value for all. */
export interface ConvIntegerOptions {
  stride?: number | number[];
  /** Padding before and after each spatial dim (2·rank values), or one value per dim, or one for all. */
  pads?: number | number[];
  dilation?: number | number[];
  groups?: number;
  /** Applied to the sums [N, Cout, P] before they are returned (channels and inner are the conv's). */
  epilogue?: Omit<RequantizeInt32Options, 'channels' | 'inner'>;
  /** The epilogue's fused-add input, one value per output (needs `epilogue.sumin`). */
  added?: Tensor | null;
}

/**
 * Integer convolution: x [N, Cin, ...] int8/int16, w [Cout, Cin/groups, ...kernel] int8/int16 →
 * int32 [N, Cout, ...] of Σ x·w, wrapping modulo 2^32 (exact while Σ|x·w| < 2^31). 1-d to 3-d by
 * the weight's rank; no bias, zero points 0. Not differentiable. With `epilogue`, the sums go
 * through requantizeInt32 (per output channel) and the result has its outDtype.
 */
export function convInteger(x: Tensor, w: Tensor, options: ConvIntegerOptions = {}): Tensor {
  const op = 'convInteger';
  for (const [t, what] of [
    [x, 'input'],
    [w, 'weight'],
  ] as const) {
    if (!(t instanceof Tensor) || !INT_DTYPES.has(t.dtype)) {
      throw new DTypeError(
        `${op}: ${what} must be an int8 or int16 Tensor, got ${t instanceof Tensor ? `'${t.dtype}'` : typeof t}`,
      );
    }
  }
  const r = w.ndim - 2;
  if (r < 1 || r > 3 || x.ndim !== r + 2) {
    throw new ShapeError(
      `${op}: needs x [N, C, ...] and w [Cout, C/groups, ...kernel] of the same rank (3 to 5), got x ${shapeStr(x.shape)}, w ${shapeStr(w.shape)}`,
    );
  }
  const groups = options.groups ?? 1;
  const cin = x.shape[1]!;
  const cout = w.shape[0]!;
  if (
    !Number.isInteger(groups) ||
    groups < 1 ||
    cin % groups !== 0 ||
    cout % groups !== 0 ||
    w.shape[1]! * groups !== cin
  ) {
    throw new ShapeError(
      `${op}: x ${shapeStr(x.shape)} and w ${shapeStr(w.shape)} do not fit groups = ${groups}: both channel counts must divide by groups and w.shape[1] must be Cin/groups`,
    );
  }
  const stride = perDim(options.stride ?? 1, r, op, 'stride', 1);
  const dilation = perDim(options.dilation ?? 1, r, op, 'dilation', 1);
  const p = options.pads ?? 0;
  const pads =
    typeof p !== 'number' && p.length === 2 * r
      ? perDim(p, 2 * r, op, 'pads', 0)
      : (() => {
          const half = perDim(p, r, op, 'pads', 0);
          return [...half, ...half];
        })();
  const conv: ConvAttrs = { stride, pads, dilation, groups };
  const pl = convPlan(x, w, conv);
  if (pl.out.some((o) => o < 1)) {
    throw new ShapeError(
      `${op}: input ${shapeStr(x.shape)} is too small for kernel ${shapeStr(w.shape.slice(2))} with pads ${shapeStr(pads)} and dilation ${shapeStr(dilation)}`,
    );
  }
  if (!options.epilogue) return run1<ConvIntegerAttrs>('ConvInteger', [x, w], conv);
  const added = options.added ?? null;
  const positions = pl.out.reduce((a, b) => a * b, 1);
  const epilogue = requantizeAttrs(op, x.shape[0]! * cout * positions, added, {
    ...options.epilogue,
    channels: cout,
    inner: positions,
  });
  return run1<ConvIntegerAttrs>('ConvInteger', added ? [x, w, added] : [x, w], { ...conv, epilogue });
}
