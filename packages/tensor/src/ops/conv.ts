import { registerGradient } from '../autograd.js';
import { run1 } from '../dispatch.js';
import { InvalidArgumentError, ShapeError } from '../errors.js';
import { gemmArgs, gemmBatch } from '../gemm/gemm.js';
import { kernels, registerKernel, type Saved } from '../registry.js';
import { sizeOf } from '../shape.js';
import type { Tensor } from '../tensor.js';
import { perDim, samePadding, shapeStr, windowOutSize } from './conv-args.js';
import {
  channelSums,
  col2im,
  fromChannelMajor,
  geometry,
  im2col,
  isPointwise,
  toChannelMajor,
  type ConvGeometry,
} from './conv-im2col.js';
import { reshape } from './view.js';
import { f32, make, requireFloat } from './util.js';

/** Attributes of the Conv op; per spatial dim, `pads` as ONNX orders them: all begins, then all ends. */
export interface ConvAttrs {
  stride: number[];
  pads: number[];
  dilation: number[];
  groups: number;
}

/** Attributes of ConvBackward: the forward's, plus which gradients to compute. */
export interface ConvBackwardAttrs extends ConvAttrs {
  needInput: boolean;
  needWeight: boolean;
  needBias: boolean;
}

/**
 * A ConvBackward kernel: inputs [x, w, gy], returns [dx, dw, db] with null for the gradients not
 * asked for. `saved` is what the forward kernel saved (the cpu kernel reuses its columns).
 */
export type ConvBackwardKernel = (inputs: Tensor[], attrs: ConvBackwardAttrs, saved: Saved) => (Tensor | null)[];

export interface ConvPlan {
  geom: ConvGeometry;
  out: number[];
  cout: number;
  coutG: number;
  /** Rows of one group's column matrix: cin/groups · kernel volume. */
  k: number;
  /** Columns of the column matrix: N · output spatial size. */
  np: number;
  p: number;
}

/** Geometry and GEMM sizes of a Conv with input x [N, C, ...] and weight w. */
export function convPlan(x: Tensor, w: Tensor, a: ConvAttrs): ConvPlan {
  const r = x.ndim - 2;
  const image = x.shape.slice(2);
  const kernel = w.shape.slice(2);
  const out = image.map((s, i) =>
    windowOutSize(s, kernel[i]!, a.stride[i]!, a.pads[i]!, a.pads[r + i]!, a.dilation[i]!),
  );
  const n = x.shape[0]!;
  const geom = geometry(n, x.shape[1]!, image, kernel, out, a.stride, a.pads.slice(0, r), a.dilation);
  const p = sizeOf(out);
  const cout = w.shape[0]!;
  return { geom, out, cout, coutG: cout / a.groups, k: (x.shape[1]! / a.groups) * sizeOf(kernel), np: n * p, p };
}

/** The whole batch's column matrix [C·kvol, N·P] (the input itself, channel-major, for pointwise convs). */
function columns(x: Tensor, pl: ConvPlan): Float32Array {
  const { geom } = pl;
  if (isPointwise(geom)) return toChannelMajor(f32(x), geom.n, geom.c, pl.p);
  const cols = new Float32Array(geom.c * geom.kd * geom.kh * geom.kw * pl.np);
  im2col(f32(x), geom, cols);
  return cols;
}

registerKernel<(i: Tensor[], a: ConvAttrs, s: Saved) => Tensor>({
  op: 'Conv',
  backend: 'cpu',
  fn: ([x, w, b], attrs, saved) => {
    const pl = convPlan(x!, w!, attrs);
    const { coutG, k, np } = pl;
    const cols = columns(x!, pl);
    const wv = f32(w!);
    const t = new Float32Array(pl.cout * np);
    gemmBatch(attrs.groups, gemmArgs(false, false, coutG, np, k, wv, cols, t), {
      a: coutG * k,
      b: k * np,
      c: coutG * np,
    });
    saved.cols = cols;
    const y = fromChannelMajor(t, pl.geom.n, pl.cout, pl.p, b ? f32(b) : undefined);
    return make(y, [pl.geom.n, pl.cout, ...pl.out]);
  },
});

registerKernel<ConvBackwardKernel>({
  op: 'ConvBackward',
  backend: 'cpu',
  fn: ([x, w, gy], attrs, saved) => {
    const pl = convPlan(x!, w!, attrs);
    const { geom, coutG, k, np, p } = pl;
    const gv = f32(gy!);
    const gT = toChannelMajor(gv, geom.n, pl.cout, p);
    let dx: Tensor | null = null;
    let dw: Tensor | null = null;
    if (attrs.needWeight) {
      const cols = (saved.cols as Float32Array | undefined) ?? columns(x!, pl);
      const out = new Float32Array(w!.size);
      gemmBatch(attrs.groups, gemmArgs(false, true, coutG, k, np, gT, cols, out), {
        a: coutG * np,
        b: k * np,
        c: coutG * k,
      });
      dw = make(out, w!.shape);
    }
    if (attrs.needInput) {
      const wv = f32(w!);
      const dcols = new Float32Array(attrs.groups * k * np);
      gemmBatch(attrs.groups, gemmArgs(true, false, k, np, coutG, wv, gT, dcols), {
        a: coutG * k,
        b: coutG * np,
        c: k * np,
      });
      let out: Float32Array;
      if (isPointwise(geom)) {
        out = fromChannelMajor(dcols, geom.n, geom.c, p);
      } else {
        out = new Float32Array(x!.size);
        col2im(dcols, geom, out);
      }
      dx = make(out, x!.shape);
    }
    const db = attrs.needBias ? make(channelSums(gv, geom.n, pl.cout, p), [pl.cout]) : null;
    return [dx, dw, db];
  },
});

// The gradient dispatches like a forward op, so backends can bring their own backward kernel.
registerGradient<ConvAttrs>('Conv', ({ inputs: [x, w, b], attrs, saved }, [gy]) =>
  convGradients(x!, w!, b, attrs, saved, gy!),
);

/** [dx, dw, db] of a Conv with operands x, w, b (null where not required) for the output gradient gy. */
export function convGradients(
  x: Tensor,
  w: Tensor,
  b: Tensor | undefined,
  attrs: ConvAttrs,
  saved: Saved,
  gy: Tensor,
): (Tensor | null)[] {
  const a: ConvBackwardAttrs = {
    ...attrs,
    needInput: x.requiresGrad,
    needWeight: w.requiresGrad,
    needBias: !!b?.requiresGrad,
  };
  if (!a.needInput && !a.needWeight && !a.needBias) return [null, null, null];
  const inputs = [x, w, gy];
  return kernels.resolve<ConvBackwardKernel>('ConvBackward', inputs, a).fn(inputs, a, saved);
}

export interface ConvOptions {
  stride?: number | readonly number[];
  /** Zero padding on both sides of each spatial dim; 'same' keeps the size (stride 1 only), 'valid' is 0. */
  padding?: number | readonly number[] | 'same' | 'valid';
  dilation?: number | readonly number[];
  groups?: number;
}

/**
 * A rank-`r` (transposed) convolution's input with its batch dim, after checking the weight: float and
 * r + 2 dims, `layout` naming its first two (the kernel follows).
 */
export function convOperands(
  op: string,
  r: number,
  x: Tensor,
  weight: Tensor,
  layout: string,
): { xb: Tensor; unbatched: boolean } {
  const operand = batched(op, x, r);
  requireFloat(weight, op, 'weight');
  if (weight.ndim !== r + 2) {
    throw new ShapeError(`${op}: weight must be ${r + 2}-d [${layout}, ...kernel], got ${shapeStr(weight.shape)}`);
  }
  return operand;
}

/** Checks groups and channel counts shared by Conv and ConvTranspose. */
export function checkGroups(op: string, groups: number, cin: number, cout: number, w: Tensor): void {
  if (!Number.isInteger(groups) || groups < 1) {
    throw new InvalidArgumentError(`${op}: groups must be a positive integer, got ${groups}`);
  }
  if (cin % groups !== 0 || cout % groups !== 0) {
    throw new ShapeError(
      `${op}: in_channels (${cin}) and out_channels (${cout}) must both be divisible by groups (${groups}); weight ${shapeStr(w.shape)}`,
    );
  }
}

/** Validates inputs of a rank-`r` op taking [N, C, ...] or unbatched [C, ...] input; returns the batched input. */
function batched(op: string, x: Tensor, r: number): { xb: Tensor; unbatched: boolean } {
  requireFloat(x, op);
  if (x.ndim === r + 2) return { xb: x, unbatched: false };
  if (x.ndim === r + 1) return { xb: reshape(x, [1, ...x.shape]), unbatched: true };
  throw new ShapeError(
    `${op}: input must be ${r + 2}-d [N, C, ${r === 1 ? 'L' : r === 2 ? 'H, W' : 'D, H, W'}] (or ${r + 1}-d without the batch dim), got ${shapeStr(x.shape)}`,
  );
}

export function checkBias(op: string, bias: Tensor, channels: number): void {
  requireFloat(bias, op, 'bias');
  if (bias.ndim !== 1 || bias.shape[0] !== channels) {
    throw new ShapeError(
      `${op}: bias must have shape [${channels}] (one per output channel), got ${shapeStr(bias.shape)}`,
    );
  }
}

/**
 * Checks a rank-`r` convolution's operands and options (`op` names it in errors) and resolves them to
 * the Conv op's attributes; `xb` is the input with its batch dim.
 */
export function convSetup(
  op: string,
  r: number,
  x: Tensor,
  weight: Tensor,
  bias: Tensor | null | undefined,
  o: ConvOptions,
): { xb: Tensor; unbatched: boolean; attrs: ConvAttrs } {
  const { xb, unbatched } = convOperands(op, r, x, weight, 'out_channels, in_channels/groups');
  const groups = o.groups ?? 1;
  const cin = xb.shape[1]!;
  const cout = weight.shape[0]!;
  checkGroups(op, groups, cin, cout, weight);
  if (weight.shape[1]! * groups !== cin) {
    throw new ShapeError(
      `${op}: weight ${shapeStr(weight.shape)} expects ${weight.shape[1]! * groups} input channels (in_channels/groups = ${weight.shape[1]}, groups = ${groups}) but the input ${shapeStr(x.shape)} has ${cin}`,
    );
  }
  if (bias) checkBias(op, bias, cout);
  const stride = perDim(o.stride ?? 1, r, op, 'stride', 1);
  const dilation = perDim(o.dilation ?? 1, r, op, 'dilation', 1);
  const kernel = weight.shape.slice(2);
  let pads: number[];
  const padding = o.padding ?? 0;
  if (padding === 'valid') {
    pads = new Array<number>(2 * r).fill(0);
  } else if (padding === 'same') {
    if (stride.some((s) => s !== 1)) {
      throw new InvalidArgumentError(
        `${op}: padding 'same' needs stride 1, got stride [${stride.join(', ')}]; pad explicitly instead`,
      );
    }
    // Like PyTorch: the odd leftover of the total padding goes after.
    pads = samePadding(kernel, dilation);
  } else {
    const p = perDim(padding, r, op, 'padding', 0);
    pads = [...p, ...p];
  }
  const image = xb.shape.slice(2);
  image.forEach((s, i) => {
    if (windowOutSize(s, kernel[i]!, stride[i]!, pads[i]!, pads[r + i]!, dilation[i]!) < 1) {
      throw new ShapeError(
        `${op}: input ${shapeStr(x.shape)} is too small for kernel ${shapeStr(kernel)} with dilation [${dilation.join(', ')}] and padding [${pads.slice(0, r).join(', ')}] in spatial dim ${i}; pad the input or use a smaller kernel`,
      );
    }
  });
  return { xb, unbatched, attrs: { stride, pads, dilation, groups } };
}

/** The rank-`r` convolution `conv${r}d`. */
function convNd(r: number, x: Tensor, weight: Tensor, bias: Tensor | null | undefined, o: ConvOptions): Tensor {
  const { xb, unbatched, attrs } = convSetup(`conv${r}d`, r, x, weight, bias, o);
  const y = run1<ConvAttrs>('Conv', bias ? [xb, weight, bias] : [xb, weight], attrs);
  return unbatched ? reshape(y, y.shape.slice(1)) : y;
}

/** 1-d convolution: x [N, Cin, L], weight [Cout, Cin/groups, K], bias [Cout]. */
export function conv1d(x: Tensor, weight: Tensor, bias?: Tensor | null, options: ConvOptions = {}): Tensor {
  return convNd(1, x, weight, bias, options);
}

/** 2-d convolution (cross-correlation, as PyTorch): x [N, Cin, H, W], weight [Cout, Cin/groups, KH, KW], bias [Cout]. */
export function conv2d(x: Tensor, weight: Tensor, bias?: Tensor | null, options: ConvOptions = {}): Tensor {
  return convNd(2, x, weight, bias, options);
}

/** 3-d convolution: x [N, Cin, D, H, W], weight [Cout, Cin/groups, KD, KH, KW], bias [Cout]. */
export function conv3d(x: Tensor, weight: Tensor, bias?: Tensor | null, options: ConvOptions = {}): Tensor {
  return convNd(3, x, weight, bias, options);
}
