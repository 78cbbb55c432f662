import { convF64, convTransposeF64 } from './int-conv-f64.js';
import {
  convInteger,
  InvalidArgumentError,
  kernels,
  run1,
  ShapeError,
  Tensor,
  type ConvAttrs,
  type ConvIntegerOptions,
  type ConvOptions,
  type ConvTransposeAttrs,
  type ConvTransposeOptions,
  type TypedArray,
  samePadding,
  windowOutSize,
} from '@qtk/tensor';
import { f32Tensor, int32Tensor, partScales, requireIntInput, saturateInt32 } from './exact-sum.js';
import { type ChannelPlan, convTL1, fitsInt32, fitsInt32ByDtype, kernelL1, planChannels } from './int-conv-bounds.js';

// Exact integer convolutions on the float32 conv kernels (im2col + GEMM, wasm SIMD when loaded).
// Each output's Σ|x·w| is bounded per input channel by max|x[c]| · L1(w[·, c]); input channels are
// cut into chunks (the same range in every group) whose bound stays within 2^24, int16 inputs may
// be split into bytes stacked along the batch (x = 256·hi + lo), chunk results are added in float64
// and saturated to int32. Only a kernel too large for one channel to fit falls back to float64 loops.
// Where the backend has an integer kernel (ConvInteger on wasm: int16 pairs, int32 sums) and every
// output's Σ|x·w| stays within int32, intConv uses it instead: its sums are then exact, no chunks.

const shapeStr = (s: readonly number[]) => `[${s.join(', ')}]`;

function perDim(
  fn: string,
  name: string,
  value: number | readonly number[] | undefined,
  rank: number,
  dflt: number,
  min: number,
): number[] {
  const given = value === undefined ? [dflt] : typeof value === 'number' ? [value] : [...value];
  const arr = given.length === 1 ? new Array<number>(rank).fill(given[0]!) : given;
  if (arr.length !== rank || arr.some((v) => !Number.isInteger(v) || v < min)) {
    throw new InvalidArgumentError(
      `${fn}: ${name} must be 1 or ${rank} integers ≥ ${min}, got ${JSON.stringify(value)}`,
    );
  }
  return arr;
}

interface Common {
  r: number;
  xb: Tensor;
  unbatched: boolean;
  groups: number;
  stride: number[];
  dilation: number[];
  kernel: number[];
}

function common(fn: string, x: Tensor, w: Tensor, o: ConvOptions | ConvTransposeOptions, layout: string): Common {
  requireIntInput(fn, x, 'input', true);
  requireIntInput(fn, w, 'weight', false);
  if (w.ndim < 3 || w.ndim > 5) {
    throw new ShapeError(
      `${fn}: weight must be 3-d, 4-d or 5-d ${layout} for a 1-d, 2-d or 3-d conv, got ${shapeStr(w.shape)}`,
    );
  }
  const r = w.ndim - 2;
  let xb = x;
  let unbatched = false;
  if (x.ndim === r + 1) {
    xb = new Tensor({ data: x.values(), shape: [1, ...x.shape], dtype: x.dtype });
    unbatched = true;
  } else if (x.ndim !== r + 2) {
    throw new ShapeError(
      `${fn}: a ${r}-d conv (weight ${shapeStr(w.shape)}) needs a ${r + 2}-d input [N, C, ...] (or ${r + 1}-d without the batch dim), got ${shapeStr(x.shape)}`,
    );
  }
  const groups = o.groups ?? 1;
  if (!Number.isInteger(groups) || groups < 1)
    throw new InvalidArgumentError(`${fn}: groups must be a positive integer, got ${groups}`);
  const stride = perDim(fn, 'stride', o.stride, r, 1, 1);
  const dilation = perDim(fn, 'dilation', o.dilation, r, 1, 1);
  return { r, xb, unbatched, groups, stride, dilation, kernel: w.shape.slice(2) };
}

function finish(c: Common, data: Int32Array, shape: number[]): Tensor {
  return int32Tensor(data, c.unbatched ? shape.slice(1) : shape);
}

/** Channels [c0, c1) of every group of x [N, Cin, P], parts stacked along the batch: [parts·N, groups·(c1−c0), P]. */
function inputChunk(
  xv: TypedArray,
  n: number,
  cin: number,
  pin: number,
  groups: number,
  c0: number,
  c1: number,
  split: boolean,
): Float32Array {
  const cinG = cin / groups;
  if (!split && c0 === 0 && c1 === cinG) return new Float32Array(xv);
  const parts = split ? 2 : 1;
  const out = new Float32Array(parts * n * groups * (c1 - c0) * pin);
  let j = 0;
  for (let p = 0; p < parts; p++) {
    for (let b = 0; b < n; b++) {
      for (let g = 0; g < groups; g++) {
        for (let c = c0; c < c1; c++) {
          const base = (b * cin + g * cinG + c) * pin;
          if (!split) out.set(xv.subarray(base, base + pin), j);
          else if (p === 0) for (let i = 0; i < pin; i++) out[j + i] = xv[base + i]! >> 8;
          else for (let i = 0; i < pin; i++) out[j + i] = xv[base + i]! & 255;
          j += pin;
        }
      }
    }
  }
  return out;
}

/** Runs the chunks: `call(c0, c1, xChunk)` gives the float32 result [parts·N, Cout, ...] of one chunk. */
function runChannels(
  plan: ChannelPlan,
  xv: TypedArray,
  n: number,
  cin: number,
  pin: number,
  groups: number,
  outLen: number,
  call: (c0: number, c1: number, xc: Float32Array) => Float32Array,
): Int32Array {
  const { split, ends } = plan;
  const chunkOf = (c0: number, c1: number) => call(c0, c1, inputChunk(xv, n, cin, pin, groups, c0, c1, split));
  if (!split && ends.length === 1) return new Int32Array(chunkOf(0, ends[0]!)); // |y| <= 2^24
  if (split && ends.length === 1) {
    const y = chunkOf(0, ends[0]!);
    const out = new Int32Array(outLen);
    for (let i = 0; i < outLen; i++) {
      const v = 256 * y[i]! + y[outLen + i]!;
      out[i] = v > 2147483647 ? 2147483647 : v < -2147483648 ? -2147483648 : v;
    }
    return out;
  }
  const scales = partScales(split);
  const acc = new Float64Array(outLen);
  let c0 = 0;
  for (const c1 of ends) {
    const y = chunkOf(c0, c1);
    for (let p = 0; p < scales.length; p++) {
      const s = scales[p]!;
      const off = p * outLen;
      for (let i = 0; i < outLen; i++) acc[i] = acc[i]! + s * y[off + i]!;
    }
    c0 = c1;
  }
  return saturateInt32(acc);
}

const volume = (dims: readonly number[]) => dims.reduce((p, d) => p * d, 1);

/**
 * Input channels [c0, c1) of a weight laid out as `blocks` blocks of cinG channels of `unit` values
 * each (conv [Cout, Cin/groups, k]: Cout blocks of kvol; convT [Cin, Cout/groups, k]: one block per
 * group of (Cout/groups)·kvol), as float32 [blocks, c1−c0, unit].
 */
function weightChannels(
  wv: TypedArray,
  blocks: number,
  cinG: number,
  unit: number,
  c0: number,
  c1: number,
): Float32Array {
  const cc = c1 - c0;
  if (cc === cinG) return new Float32Array(wv);
  const wc = new Float32Array(blocks * cc * unit);
  for (let b = 0; b < blocks; b++)
    wc.set(new Float32Array(wv.subarray((b * cinG + c0) * unit, (b * cinG + c1) * unit)), b * cc * unit);
  return wc;
}

/** What intConv and intConvTranspose do differently in exactConv. */
interface ConvKind {
  /** Σ|w| rows, one per output channel over the group-local input channels (see planChannels). */
  l1(wv: TypedArray, cinG: number, kvol: number): Float64Array[];
  /** The float64 fallback. */
  f64(xv: TypedArray, wv: TypedArray): Int32Array;
  /** The float32 result of input channels [c0, c1): xt is that chunk of the input, [parts·N, groups·(c1−c0), ...image]. */
  run(xt: Tensor, wv: TypedArray, c0: number, c1: number, cinG: number, kvol: number): Float32Array;
}

/** The part both convolutions share once the output size is known: the channel plan, its chunked float32 runs or the float64 fallback. */
function exactConv(c: Common, w: Tensor, cout: number, out: number[], kind: ConvKind): Tensor {
  const { xb, groups, kernel } = c;
  const [n, cin] = [xb.shape[0]!, xb.shape[1]!];
  const image = xb.shape.slice(2);
  const pin = volume(image);
  const pout = volume(out);
  const kvol = volume(kernel);
  const outShape = [n, cout, ...out];
  const cinG = cin / groups;
  if (n * cout * pout === 0 || cinG * kvol === 0) return finish(c, new Int32Array(n * cout * pout), outShape);
  const xv = xb.values();
  const wv = w.values();
  const plan = planChannels({ xv, dtype: xb.dtype, n, cin, pin, groups, l1: kind.l1(wv, cinG, kvol) });
  if (!plan) return finish(c, kind.f64(xv, wv), outShape);
  const parts = plan.split ? 2 : 1;
  const data = runChannels(plan, xv, n, cin, pin, groups, n * cout * pout, (c0, c1, xc) =>
    kind.run(f32Tensor(xc, [parts * n, groups * (c1 - c0), ...image]), wv, c0, c1, cinG, kvol),
  );
  return finish(c, data, outShape);
}

/**
 * Exact integer convolution (cross-correlation, as the float conv): x [N, Cin, ...] int8/int16,
 * w [Cout, Cin/groups, ...kernel] int8 → int32 [N, Cout, ...] = Σ x·w saturated to int32; 1-d,
 * 2-d or 3-d by the weight's rank, attributes as conv1d/2d/3d. No bias.
 */
export function intConv(x: Tensor, w: Tensor, attrs: ConvOptions = {}): Tensor {
  const { c, cout, out, convAttrs, n, cin, image, pads } = convSetup('intConv', x, w, attrs);
  const { groups, stride, dilation, kernel } = c;
  const direct = integerConv(c, w, cout, out, convAttrs);
  if (direct) return direct;
  return exactConv(c, w, cout, out, {
    l1: (wv, cinG, kvol) => kernelL1(wv, cout, cinG, kvol, false),
    f64: (xv, wv) => convF64(xv, wv, { n, cin, groups, image, kernel, out, stride, pads, dilation }, cout),
    run: (xt, wv, c0, c1, cinG, kvol) => {
      const wc = weightChannels(wv, cout, cinG, kvol, c0, c1);
      return run1<ConvAttrs>(
        'Conv',
        [xt, f32Tensor(wc, [cout, c1 - c0, ...kernel])],
        convAttrs,
      ).values() as Float32Array;
    },
  });
}

/**
 * intConv followed by the epilogue `epi` (requantizeInt32 over [N, Cout, P]; `added` is the fused
 * add's input), in one ConvInteger call when the backend has an integer kernel and the sums fit
 * int32, so the backend applies it before the sums leave its memory; null otherwise (then run
 * intConv and requantizeInt32).
 */
export function intConvRequantized(
  x: Tensor,
  w: Tensor,
  attrs: ConvOptions,
  epi: NonNullable<ConvIntegerOptions['epilogue']>,
  added: Tensor | null,
): Tensor | null {
  const { c, cout, out, convAttrs } = convSetup('intConv', x, w, attrs);
  if (c.unbatched) return null;
  return integerConv(c, w, cout, out, convAttrs, { epi, added });
}

function convSetup(fn: string, x: Tensor, w: Tensor, attrs: ConvOptions) {
  const c = common(fn, x, w, attrs, '[out_channels, in_channels/groups, ...kernel]');
  const { r, xb, groups, stride, dilation, kernel } = c;
  const [n, cin] = [xb.shape[0]!, xb.shape[1]!];
  const cout = w.shape[0]!;
  if (cin % groups !== 0 || cout % groups !== 0 || w.shape[1]! * groups !== cin) {
    throw new ShapeError(
      `${fn}: input ${shapeStr(x.shape)} has ${cin} channels and weight ${shapeStr(w.shape)} has ${cout} outputs of ${w.shape[1]} inputs each; with groups = ${groups} both channel counts must divide by groups and in_channels/groups must be ${w.shape[1]}`,
    );
  }
  const padding = attrs.padding ?? 0;
  let pads: number[];
  if (padding === 'valid') pads = new Array<number>(2 * r).fill(0);
  else if (padding === 'same') {
    if (stride.some((s) => s !== 1))
      throw new InvalidArgumentError(
        `${fn}: padding 'same' needs stride 1, got stride ${shapeStr(stride)}; pad explicitly instead`,
      );
    pads = samePadding(kernel, dilation);
  } else {
    const p = perDim(fn, 'padding', padding, r, 0, 0);
    pads = [...p, ...p];
  }
  const image = xb.shape.slice(2);
  const out = image.map((s, i) => windowOutSize(s, kernel[i]!, stride[i]!, pads[i]!, pads[r + i]!, dilation[i]!));
  out.forEach((o, i) => {
    if (o < 1) {
      throw new ShapeError(
        `${fn}: input ${shapeStr(x.shape)} is too small for kernel ${shapeStr(kernel)} (dilation ${shapeStr(dilation)}, padding ${shapeStr(pads.slice(0, r))}) in spatial dim ${i}; pad the input or use a smaller kernel`,
      );
    }
  });
  const convAttrs: ConvAttrs = { stride, pads, dilation, groups };
  return { c, cout, out, convAttrs, n, cin, image, pads };
}

/** Whether the backend would run ConvInteger natively (not on the cpu reference loops) for these operands. */
function hasIntegerKernel(x: Tensor, w: Tensor, attrs: ConvAttrs): boolean {
  try {
    return kernels.resolve('ConvInteger', [x, w], attrs).backend !== 'cpu';
  } catch {
    return false;
  }
}

/** intConv on the backend's ConvInteger kernel when it has one and the sums fit int32; else null. */
function integerConv(
  c: Common,
  w: Tensor,
  cout: number,
  out: number[],
  attrs: ConvAttrs,
  epilogue?: { epi: NonNullable<ConvIntegerOptions['epilogue']>; added: Tensor | null },
): Tensor | null {
  const { xb, groups, kernel } = c;
  const [n, cin] = [xb.shape[0]!, xb.shape[1]!];
  const kvol = volume(kernel);
  if (n * cout * volume(out) === 0 || (cin / groups) * kvol === 0 || !hasIntegerKernel(xb, w, attrs)) return null;
  if (
    !fitsInt32ByDtype(xb.dtype, w.dtype, (cin / groups) * kvol) &&
    !fitsInt32({
      xv: xb.values(),
      dtype: xb.dtype,
      n,
      cin,
      pin: volume(xb.shape.slice(2)),
      groups,
      l1: kernelL1(w.values(), cout, cin / groups, kvol, false),
    })
  )
    return null;
  if (epilogue) {
    const { stride, pads, dilation, groups } = attrs;
    return convInteger(xb, w, { stride, pads, dilation, groups, epilogue: epilogue.epi, added: epilogue.added });
  }
  const y = run1<ConvAttrs>('ConvInteger', [xb, w], attrs);
  return finish(c, y.values() as Int32Array, [n, cout, ...out]);
}

/**
 * Exact integer transposed convolution: x [N, Cin, ...] int8/int16, w [Cin, Cout/groups, ...kernel]
 * int8 → int32 [N, Cout, ...] saturated; attributes as convTranspose1d/2d (and 3-d). No bias.
 */
export function intConvTranspose(x: Tensor, w: Tensor, attrs: ConvTransposeOptions = {}): Tensor {
  const fn = 'intConvTranspose';
  const c = common(fn, x, w, attrs, '[in_channels, out_channels/groups, ...kernel]');
  const { r, xb, groups, stride, dilation, kernel } = c;
  const [n, cin] = [xb.shape[0]!, xb.shape[1]!];
  const coutG = w.shape[1]!;
  const cout = coutG * groups;
  if (w.shape[0] !== cin || cin % groups !== 0) {
    throw new ShapeError(
      `${fn}: weight ${shapeStr(w.shape)} must have the input's ${cin} channels in dim 0 (input ${shapeStr(x.shape)}), divisible by groups = ${groups}`,
    );
  }
  const padding = perDim(fn, 'padding', attrs.padding, r, 0, 0);
  const outputPadding = perDim(fn, 'outputPadding', attrs.outputPadding, r, 0, 0);
  outputPadding.forEach((p, i) => {
    if (p >= stride[i]! && p >= dilation[i]!) {
      throw new InvalidArgumentError(
        `${fn}: outputPadding ${p} in dim ${i} must be smaller than the stride (${stride[i]}) or the dilation (${dilation[i]})`,
      );
    }
  });
  const image = xb.shape.slice(2);
  const out = image.map(
    (s, i) => (s - 1) * stride[i]! - 2 * padding[i]! + dilation[i]! * (kernel[i]! - 1) + outputPadding[i]! + 1,
  );
  out.forEach((o, i) => {
    if (o < 1)
      throw new ShapeError(
        `${fn}: padding ${shapeStr(padding)} leaves no output for input ${shapeStr(x.shape)} in spatial dim ${i}; reduce the padding`,
      );
  });
  const pads = [...padding, ...padding];
  const tAttrs: ConvTransposeAttrs = { stride, pads, dilation, outputPadding, groups };
  return exactConv(c, w, cout, out, {
    l1: (wv, _cinG, kvol) => convTL1(wv, cin, coutG, kvol, groups),
    f64: (xv, wv) => convTransposeF64(xv, wv, { n, cin, groups, image, kernel, out, stride, pads, dilation }, coutG),
    run: (xt, wv, c0, c1, cinG, kvol) => {
      const wc = weightChannels(wv, groups, cinG, coutG * kvol, c0, c1);
      return run1<ConvTransposeAttrs>(
        'ConvTranspose',
        [xt, f32Tensor(wc, [groups * (c1 - c0), coutG, ...kernel])],
        tAttrs,
      ).values() as Float32Array;
    },
  });
}
