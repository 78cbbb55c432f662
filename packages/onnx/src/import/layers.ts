// ONNX operators that become @qtk/nn modules (named after the node), with a functional fallback
// when their weights are computed at run time or their attributes have no module equivalent.
import {
  AdaptiveAvgPool2d,
  AvgPool2d,
  ELU,
  Flatten,
  GELU,
  init,
  Hardsigmoid,
  Hardswish,
  Hardtanh,
  LayerNorm,
  LeakyReLU,
  Linear,
  LogSoftmax,
  MaxPool2d,
  Parameter,
  PReLU,
  ReLU,
  ReLU6,
  SELU,
  Sigmoid,
  Softmax,
  Softplus,
  Tanh,
  type Module,
} from '@qtk/nn';
import {
  Tensor,
  conv1d,
  conv2d,
  conv3d,
  convTranspose1d,
  convTranspose2d,
  elu,
  layerNorm,
  matmul,
  add,
  mul,
  transpose,
  batchNorm,
  contiguous,
  reshape,
} from '@qtk/tensor';
import { OnnxFormatError } from '../errors.js';
import { BATCH_NORM_CLASSES, CONV_CLASSES, CONV_TRANSPOSE_CLASSES, classForSpatialDims } from '../layer-classes.js';
import { ImportLimits } from './limits.js';
import { Unsupported, type NodeContext, type Val } from './context.js';
import { resize } from './resize.js';
import {
  onnxCast,
  onnxSlice,
  onnxSqueeze,
  onnxUnsqueeze,
  onnxAvgPoolDilated,
  onnxAvgPoolExcludePad,
  onnxLayerNormStats,
  onnxClip,
  onnxFlatten,
  onnxHardSigmoid,
  onnxPad,
  onnxPrelu,
  onnxReduce,
  onnxSoftmaxCoerced,
  onnxGlobalMaxPool,
} from './functions.js';

export type Handler = (ctx: NodeContext) => Val[];

function param(m: Module, name: string, t: Tensor): void {
  (m as unknown as Record<string, unknown>)[name] = new Parameter(contiguous(t));
}

function buffer(m: Module, name: string, t: Tensor): void {
  const b = (m as unknown as Record<string, Tensor>)[name]!;
  (b.values() as Float32Array).set(t.values() as Float32Array);
}

function scalarT(v: number): Tensor {
  return new Tensor({ data: Float32Array.of(v), shape: [], dtype: 'float32' });
}

/** Throws OnnxFormatError unless `values` (attribute `attr`) holds `n` integers of at least `min`. */
function checkInts(ctx: NodeContext, attr: string, values: readonly number[], n: number, min: number): void {
  if (values.length === n && values.every((v) => Number.isSafeInteger(v) && v >= min)) return;
  throw new OnnxFormatError(
    `importOnnx: ${ctx.opType} '${ctx.name}': ${attr} [${values.join(', ')}] must be ${n} integer(s) of at least ${min}; the model is invalid`,
  );
}

/** Validates a window op's strides, dilations and kernel_shape (against the weight's, when given) for `r` spatial dims. */
function checkWindow(
  ctx: NodeContext,
  r: number,
  kernel: number[],
  strides: number[],
  dilations: number[],
  weightShape?: readonly number[],
): void {
  checkInts(ctx, 'strides', strides, r, 1);
  checkInts(ctx, 'dilations', dilations, r, 1);
  checkInts(ctx, 'kernel_shape', kernel, r, 1);
  const declared = ctx.ints('kernel_shape');
  if (weightShape && declared && (declared.length !== r || declared.some((k, i) => k !== kernel[i]))) {
    throw new OnnxFormatError(
      `importOnnx: ${ctx.opType} '${ctx.name}': kernel_shape [${declared.join(', ')}] contradicts the weight of shape [${weightShape.join(', ')}]; the model is invalid`,
    );
  }
}

/** Explicit begin/end pads per spatial dim from pads or auto_pad, for a window op over `spatial` dims. */
function windowPads(
  ctx: NodeContext,
  spatial: number[],
  kernel: number[],
  strides: number[],
  dilations: number[],
): number[] {
  const r = spatial.length;
  const autoPad = ctx.str('auto_pad', 'NOTSET');
  if (autoPad === 'NOTSET') {
    const pads = ctx.ints('pads') ?? new Array<number>(2 * r).fill(0);
    checkInts(ctx, 'pads', pads, 2 * r, 0);
    return pads;
  }
  if (autoPad === 'VALID') return new Array<number>(2 * r).fill(0);
  const begins: number[] = [];
  const ends: number[] = [];
  spatial.forEach((n, i) => {
    const out = Math.ceil(n / strides[i]!);
    const total = Math.max(0, (out - 1) * strides[i]! + (kernel[i]! - 1) * dilations[i]! + 1 - n);
    const small = Math.floor(total / 2);
    if (autoPad === 'SAME_UPPER') {
      begins.push(small);
      ends.push(total - small);
    } else {
      begins.push(total - small);
      ends.push(small);
    }
  });
  return [...begins, ...ends];
}

function symmetric(pads: number[]): number[] | null {
  const r = pads.length / 2;
  const b = pads.slice(0, r);
  return b.every((p, i) => p === pads[r + i]) ? b : null;
}

/** Pads the leading spatial window explicitly when pads are asymmetric; returns the input and the symmetric pads left. */
function prePad(
  ctx: NodeContext,
  x: Val,
  pads: number[],
  value: number,
  kernel?: number[],
): { x: Val; pads: number[] } {
  const sym = symmetric(pads);
  if (sym && (!kernel || sym.every((p, i) => 2 * p <= kernel[i]!))) return { x, pads: sym };
  const r = pads.length / 2;
  const full = [0, 0, ...pads.slice(0, r), 0, 0, ...pads.slice(r)];
  return { x: ctx.fn(onnxPad, [x, full, 'constant', value], '_pad'), pads: new Array<number>(r).fill(0) };
}

/** The bias of a convolution: its third input, or the Add after it that findBiasAdds folded in, or none. */
function biasInput(ctx: NodeContext, fused: Tensor | undefined): Val | null {
  if (ctx.has(2)) return ctx.input(2);
  return fused ? { kind: 'const', t: fused } : null;
}

const conv: Handler = (ctx) => {
  const fused = ctx.imp.fusedBias.get(ctx.node);
  const x = ctx.input(0);
  const w = ctx.ex(1);
  const r = w.ndim - 2;
  if (r < 1 || r > 3) throw new Unsupported(`${r}-d convolution is not supported (1-d, 2-d and 3-d are)`);
  const kernel = w.shape.slice(2);
  const strides = ctx.ints('strides') ?? new Array<number>(r).fill(1);
  const dilations = ctx.ints('dilations') ?? new Array<number>(r).fill(1);
  const groups = ctx.int('group', 1);
  checkWindow(ctx, r, kernel, strides, dilations, w.shape);
  const inShape = ctx.ex(0).shape;
  const pads = windowPads(ctx, inShape.slice(2), kernel, strides, dilations);
  const padded = inShape.slice(2).map((n, i) => n + pads[i]! + pads[r + i]!);
  ctx.limit([...inShape.slice(0, 2), ...padded]); // the explicit pad of asymmetric pads
  const outBound = [
    inShape[0] ?? 1,
    w.shape[0]!,
    ...padded.map((n, i) => Math.max(0, Math.floor((n - dilations[i]! * (kernel[i]! - 1) - 1) / strides[i]!) + 1)),
  ];
  ctx.limit(outBound);
  ctx.limit(
    [inShape[1]! * ImportLimits.count(kernel), outBound[0]! * ImportLimits.count(outBound.slice(2))],
    'a column matrix',
  );
  ctx.work(ImportLimits.count(outBound) * ImportLimits.count(w.shape.slice(1)));
  const pp = prePad(ctx, x, pads, 0);
  const opts = { stride: strides, padding: pp.pads, dilation: dilations, groups };
  if (ctx.isConst(1) && (!ctx.has(2) || ctx.isConst(2))) {
    const cin = w.shape[1]! * groups;
    const Cls = classForSpatialDims(CONV_CLASSES, r);
    const bias = ctx.has(2) ? ctx.ex(2) : fused;
    const m = init.skipInit(() => new Cls(cin, w.shape[0]!, kernel, { ...opts, bias: bias !== undefined }));
    param(m, 'weight', w);
    if (bias) param(m, 'bias', bias);
    return [ctx.module(m, [pp.x])];
  }
  const f = r === 1 ? conv1d : r === 2 ? conv2d : conv3d;
  return [ctx.fn(f, [pp.x, ctx.input(1), biasInput(ctx, fused), opts])];
};

const convTranspose: Handler = (ctx) => {
  const fused = ctx.imp.fusedBias.get(ctx.node);
  const x = ctx.input(0);
  const w = ctx.ex(1);
  const r = w.ndim - 2;
  if (r < 1 || r > 2) throw new Unsupported(`${r}-d transposed convolution is not supported (1-d and 2-d are)`);
  const kernel = w.shape.slice(2);
  const strides = ctx.ints('strides') ?? new Array<number>(r).fill(1);
  const dilations = ctx.ints('dilations') ?? new Array<number>(r).fill(1);
  const groups = ctx.int('group', 1);
  let outPad = ctx.ints('output_padding') ?? new Array<number>(r).fill(0);
  let pads = ctx.ints('pads') ?? new Array<number>(2 * r).fill(0);
  const outputShape = ctx.ints('output_shape');
  const autoPad = ctx.str('auto_pad', 'NOTSET');
  const inSp = ctx.ex(0).shape.slice(2);
  checkWindow(ctx, r, kernel, strides, dilations, w.shape);
  checkInts(ctx, 'pads', pads, 2 * r, 0);
  checkInts(ctx, 'output_padding', outPad, r, 0);
  ctx.limit([
    ctx.ex(0).shape[0] ?? 1,
    w.shape[1]! * groups,
    ...inSp.map((n, i) => strides[i]! * Math.max(0, n - 1) + outPad[i]! + (kernel[i]! - 1) * dilations[i]! + 1),
  ]);
  ctx.limit(
    [w.shape[1]! * groups * ImportLimits.count(kernel), ImportLimits.count([ctx.ex(0).shape[0] ?? 1, ...inSp])],
    'a column matrix',
  );
  ctx.work(ImportLimits.count(ctx.ex(0).shape) * ImportLimits.count(w.shape.slice(1)));
  if (outputShape) ctx.limit([ctx.ex(0).shape[0] ?? 1, w.shape[1]! * groups, ...outputShape.slice(-r)]);
  if (outputShape || (autoPad !== 'NOTSET' && autoPad !== 'VALID')) {
    const target = outputShape ? outputShape.slice(-r) : inSp.map((n, i) => n * strides[i]!);
    const begins: number[] = [];
    const ends: number[] = [];
    target.forEach((o, i) => {
      const total = strides[i]! * (inSp[i]! - 1) + outPad[i]! + ((kernel[i]! - 1) * dilations[i]! + 1) - o;
      const half = Math.floor(total / 2);
      if (autoPad === 'SAME_UPPER') {
        begins.push(half);
        ends.push(total - half);
      } else {
        begins.push(total - half);
        ends.push(half);
      }
    });
    pads = [...begins, ...ends];
  }
  // An end pad smaller than the begin pad is the same as more output padding; a larger one crops the end afterwards.
  const padding = pads.slice(0, r);
  const crop = padding.map((p, i) => Math.max(0, pads[r + i]! - p));
  outPad = outPad.map((p, i) => (crop[i]! > 0 ? p : p + padding[i]! - pads[r + i]!));
  const opts = { stride: strides, padding, outputPadding: outPad, dilation: dilations, groups };
  const cropEnd = (y: Val): Val => {
    const axes = crop.flatMap((c, i) => (c > 0 ? [i + 2] : []));
    if (axes.length === 0) return y;
    return ctx.fn(onnxSlice, [y, axes.map(() => 0), axes.map((a) => -crop[a - 2]!), axes, axes.map(() => 1)], '_crop');
  };
  if (ctx.isConst(1) && (!ctx.has(2) || ctx.isConst(2))) {
    const Cls = classForSpatialDims(CONV_TRANSPOSE_CLASSES, r);
    const bias = ctx.has(2) ? ctx.ex(2) : fused;
    const m = init.skipInit(
      () => new Cls(w.shape[0]!, w.shape[1]! * groups, kernel, { ...opts, bias: bias !== undefined }),
    );
    param(m, 'weight', w);
    if (bias) param(m, 'bias', bias);
    return [cropEnd(ctx.module(m, [x]))];
  }
  const f = r === 1 ? convTranspose1d : convTranspose2d;
  return [cropEnd(ctx.fn(f, [x, ctx.input(1), biasInput(ctx, fused), opts]))];
};

const gemm: Handler = (ctx) => {
  const alpha = ctx.float('alpha', 1);
  const beta = ctx.float('beta', 1);
  const transA = ctx.int('transA', 0);
  const transB = ctx.int('transB', 0);
  const c = ctx.has(2) ? ctx.ex(2) : null;
  const n = ctx.ex(1).shape[transB ? 0 : 1]!;
  ctx.limit([ctx.ex(0).shape[transA ? 1 : 0] ?? 1, n]);
  ctx.work(ctx.ex(0).size * n);
  if (
    !transA &&
    alpha === 1 &&
    beta === 1 &&
    ctx.isConst(1) &&
    (!c || (ctx.isConst(2) && c.size === n && c.shape[c.ndim - 1] === n))
  ) {
    const b = ctx.ex(1);
    const m = init.skipInit(() => new Linear(b.shape[transB ? 1 : 0]!, n, { bias: !!c }));
    param(m, 'weight', transB ? b : contiguous(transpose(b, 0, 1)));
    if (c) param(m, 'bias', reshape(contiguous(c), [n]));
    return [ctx.module(m, [ctx.input(0)])];
  }
  let a = ctx.input(0);
  if (transA) a = ctx.fn(transpose, [a, 0, 1], '_transA');
  let b = ctx.input(1);
  if (transB) b = ctx.fn(transpose, [b, 0, 1], '_transB');
  let y = ctx.fn(matmul, [a, b], '_matmul');
  if (alpha !== 1) y = ctx.fn(mul, [y, { kind: 'const', t: scalarT(alpha) }], '_alpha');
  if (ctx.has(2)) {
    let cv = ctx.input(2);
    if (beta !== 1) cv = ctx.fn(mul, [cv, { kind: 'const', t: scalarT(beta) }], '_beta');
    y = ctx.fn(add, [y, cv]);
  }
  return [y];
};

const batchNormalization: Handler = (ctx) => {
  const x = ctx.ex(0);
  const eps = ctx.float('epsilon', 1e-5);
  const momentum = ctx.float('momentum', 0.9);
  if (ctx.node.output && ctx.node.output.filter(Boolean).length > 1)
    throw new Unsupported('training mode (running statistics as outputs) is not supported');
  const c = x.shape[1]!;
  if ([1, 2, 3, 4].every((i) => ctx.isConst(i)) && x.ndim >= 2 && x.ndim <= 5) {
    const Cls = classForSpatialDims(BATCH_NORM_CLASSES, x.ndim - 2);
    const m = new Cls(c, { eps, momentum: 1 - momentum });
    param(m, 'weight', ctx.ex(1));
    param(m, 'bias', ctx.ex(2));
    buffer(m, 'runningMean', ctx.ex(3));
    buffer(m, 'runningVar', ctx.ex(4));
    return [ctx.module(m, [ctx.input(0)])];
  }
  return [
    ctx.fn(batchNorm, [ctx.input(0), ctx.input(3), ctx.input(4), ctx.input(1), ctx.input(2), { training: false, eps }]),
  ];
};

const clip: Handler = (ctx) => {
  let lo: number | Val | null;
  let hi: number | Val | null;
  if (ctx.opset < 11) {
    lo = ctx.float('min', -3.4028234663852886e38);
    hi = ctx.float('max', 3.4028234663852886e38);
  } else {
    const bound = (i: number): number | Val | null =>
      !ctx.has(i) ? null : ctx.isConst(i) ? (ctx.ex(i).values()[0] as number) : ctx.input(i);
    lo = bound(1);
    hi = bound(2);
  }
  if (typeof lo === 'number' && lo <= -3.4e38) lo = null;
  if (typeof hi === 'number' && hi >= 3.4e38) hi = null;
  if (lo === null && hi === null) return [ctx.input(0)];
  if (lo === 0 && hi === 6) return [ctx.module(new ReLU6(), [ctx.input(0)])];
  if (lo === 0 && hi === null) return [ctx.module(new ReLU(), [ctx.input(0)])];
  if (typeof lo === 'number' && typeof hi === 'number' && lo <= hi)
    return [ctx.module(new Hardtanh({ minVal: lo, maxVal: hi }), [ctx.input(0)])];
  return [ctx.fn(onnxClip, [ctx.input(0), lo, hi])];
};

const softmaxLike =
  (log: boolean): Handler =>
  (ctx) => {
    const x = ctx.ex(0);
    const axis = ctx.int('axis', ctx.opset >= 13 ? -1 : 1);
    const a = axis < 0 ? axis + x.ndim : axis;
    if (ctx.opset >= 13 || a === x.ndim - 1) {
      const m = log ? new LogSoftmax({ dim: a - x.ndim }) : new Softmax({ dim: a - x.ndim });
      return [ctx.module(m, [ctx.input(0)])];
    }
    return [ctx.fn(onnxSoftmaxCoerced, [ctx.input(0), a, log])];
  };

interface PoolGeometry {
  x: Val;
  kernel: number[];
  strides: number[];
  dilations: number[];
  pads: number[];
  /** A 1-d pool runs as a 2-d one over [N, C, 1, L]. */
  oneD: boolean;
}

function poolGeometry(ctx: NodeContext, what: string): PoolGeometry {
  const k = ctx.ints('kernel_shape') ?? [];
  const rank = ctx.ex(0).ndim;
  if (!((k.length === 2 && rank === 4) || (k.length === 1 && rank === 3))) {
    throw new Unsupported(`only 1-d and 2-d ${what} are supported, got kernel_shape [${k.join(', ')}]`);
  }
  const s = ctx.ints('strides') ?? k.map(() => 1);
  const d = ctx.ints('dilations') ?? k.map(() => 1);
  checkWindow(ctx, k.length, k, s, d);
  const inShape = ctx.ex(0).shape;
  const pads = windowPads(ctx, inShape.slice(2), k, s, d);
  ctx.limit([...inShape.slice(0, 2), ...inShape.slice(2).map((n, i) => n + pads[i]! + pads[k.length + i]!)]);
  if (k.length === 2) return { x: ctx.input(0), kernel: k, strides: s, dilations: d, pads, oneD: false };
  const x = ctx.fn(onnxUnsqueeze, [ctx.input(0), [2]], '_2d');
  return {
    x,
    kernel: [1, k[0]!],
    strides: [1, s[0]!],
    dilations: [1, d[0]!],
    pads: [0, pads[0]!, 0, pads[1]!],
    oneD: true,
  };
}

function poolResult(ctx: NodeContext, g: PoolGeometry, y: Val): Val[] {
  return [g.oneD ? ctx.fn(onnxSqueeze, [y, [2]], '_1d') : y];
}

const maxPool: Handler = (ctx) => {
  if ((ctx.node.output ?? []).filter(Boolean).length > 1) throw new Unsupported('the Indices output is not supported');
  if (ctx.int('storage_order', 0) !== 0) throw new Unsupported('storage_order 1 is not supported');
  const g = poolGeometry(ctx, 'MaxPool');
  // Integer inputs pool exactly in float32 (8-bit values), then convert back.
  const integer = ctx.ex(0).dtype !== 'float32';
  if (integer) g.x = ctx.fn(onnxCast, [g.x, 'float32'], '_float');
  const pp = prePad(ctx, g.x, g.pads, -Infinity, g.kernel);
  const m = new MaxPool2d(g.kernel, {
    stride: g.strides,
    padding: pp.pads,
    dilation: g.dilations,
    ceilMode: ctx.int('ceil_mode', 0) === 1,
  });
  const [y] = poolResult(ctx, g, ctx.module(m, [pp.x]));
  return [integer ? ctx.fn(onnxCast, [y!, ctx.ex(0).dtype], '_int') : y!];
};

const averagePool: Handler = (ctx) => {
  const g = poolGeometry(ctx, 'AveragePool');
  const includePad = ctx.int('count_include_pad', 0) === 1;
  const ceilMode = ctx.int('ceil_mode', 0) === 1;
  if (g.dilations.some((d) => d !== 1)) {
    // opset 19's dilated windows: no module has them
    if (ceilMode) throw new Unsupported('dilations other than 1 with ceil_mode = 1 are not supported');
    const args = [g.x, g.kernel, g.strides, g.dilations, g.pads, includePad];
    return poolResult(ctx, g, ctx.fn(onnxAvgPoolDilated, args));
  }
  let x = g.x;
  let padding = symmetric(g.pads);
  if (!padding || padding.some((p, i) => 2 * p > g.kernel[i]!)) {
    if (!includePad)
      return poolResult(ctx, g, ctx.fn(onnxAvgPoolExcludePad, [x, g.kernel, g.strides, g.pads, ceilMode]));
    const pp = prePad(ctx, x, g.pads, 0, g.kernel);
    x = pp.x;
    padding = pp.pads;
  }
  const m = new AvgPool2d(g.kernel, { stride: g.strides, padding, ceilMode, countIncludePad: includePad });
  return poolResult(ctx, g, ctx.module(m, [x]));
};

const layerNormalization: Handler = (ctx) => {
  const x = ctx.ex(0);
  const axis = ctx.int('axis', -1);
  const a = axis < 0 ? axis + x.ndim : axis;
  const eps = ctx.float('epsilon', 1e-5);
  const extra = (ctx.node.output ?? []).slice(1).some(Boolean)
    ? ctx.imp.callMulti(onnxLayerNormStats, [ctx.input(0), a, eps], `${ctx.name}_stats`)
    : [];
  const shape = x.shape.slice(a);
  const scale = ctx.ex(1);
  const fullShape = (t: Tensor) => t.size === shape.reduce((p, d) => p * d, 1);
  if (ctx.isConst(1) && fullShape(scale) && (!ctx.has(2) || (ctx.isConst(2) && fullShape(ctx.ex(2))))) {
    const m = new LayerNorm(shape, { eps, bias: ctx.has(2) });
    param(m, 'weight', reshape(contiguous(scale), shape));
    if (ctx.has(2)) param(m, 'bias', reshape(contiguous(ctx.ex(2)), shape));
    return [ctx.module(m, [ctx.input(0)]), ...extra];
  }
  const y = ctx.fn(layerNorm, [ctx.input(0), shape, null, null, eps], '_norm');
  const s = ctx.fn(mul, [y, ctx.input(1)], '_scale');
  return [ctx.has(2) ? ctx.fn(add, [s, ctx.input(2)]) : s, ...extra];
};

const prelu: Handler = (ctx) => {
  const x = ctx.ex(0);
  const slope = ctx.ex(1);
  const c = x.ndim >= 2 ? x.shape[1]! : 1;
  // before opset 7 a slope of shape [C] is per channel (PyTorch's nn.PReLU(C) exported at opset 6), not broadcast
  const legacyPerChannel = ctx.opset < 7 && slope.ndim === 1 && slope.size === c && x.ndim >= 2;
  const perChannel =
    slope.size === c && x.ndim >= 2 && ((slope.ndim === x.ndim - 1 && slope.shape[0] === c) || legacyPerChannel);
  if (legacyPerChannel && !ctx.isConst(1)) {
    const perAxis = ctx.fn(onnxUnsqueeze, [ctx.input(1), x.shape.slice(2).map((_, i) => i + 1)], '_slope');
    return [ctx.fn(onnxPrelu, [ctx.input(0), perAxis])];
  }
  if (ctx.isConst(1) && (slope.size === 1 || perChannel)) {
    const m = new PReLU({ numParameters: slope.size });
    param(m, 'weight', reshape(contiguous(slope), [slope.size]));
    return [ctx.module(m, [ctx.input(0)])];
  }
  return [ctx.fn(onnxPrelu, [ctx.input(0), ctx.input(1)])];
};

const simple =
  (make: () => Module): Handler =>
  (ctx) => [ctx.module(make(), [ctx.input(0)])];

/** Gelu (opset 20): the GELU module the decomposed Erf / Tanh forms of earlier opsets become, so a march converts it. */
const geluOp: Handler = (ctx) => {
  const approximate = ctx.str('approximate', 'none');
  if (ctx.opset < 20 || (approximate !== 'none' && approximate !== 'tanh')) {
    throw new OnnxFormatError(
      `importOnnx: Gelu '${ctx.name}': ${ctx.opset < 20 ? `Gelu is an opset-20 operator, but the model declares opset ${ctx.opset}` : `approximate '${approximate}' is not 'none' or 'tanh'`}; the model is invalid`,
    );
  }
  return [ctx.module(new GELU({ approximate }), [ctx.input(0)])];
};

export const layerHandlers: Record<string, Handler> = {
  Conv: conv,
  ConvTranspose: convTranspose,
  Gemm: gemm,
  BatchNormalization: batchNormalization,
  Relu: simple(() => new ReLU()),
  Clip: clip,
  LeakyRelu: (ctx) => [ctx.module(new LeakyReLU({ negativeSlope: ctx.float('alpha', 0.01) }), [ctx.input(0)])],
  PRelu: prelu,
  Sigmoid: simple(() => new Sigmoid()),
  Tanh: simple(() => new Tanh()),
  Elu: (ctx) => [ctx.module(new ELU({ alpha: ctx.float('alpha', 1) }), [ctx.input(0)])],
  Selu: (ctx) => {
    // the float32 values of SELU's constants (ONNX defaults), in the shortest decimal that reads back exactly
    const alpha = ctx.float('alpha', 1.6732631921768188);
    const gamma = ctx.float('gamma', 1.0507010221481323);
    if (Math.abs(alpha - 1.6732632) < 1e-6 && Math.abs(gamma - 1.050701) < 1e-6)
      return [ctx.module(new SELU(), [ctx.input(0)])];
    const e = ctx.fn(elu, [ctx.input(0), alpha], '_elu');
    return [ctx.fn(mul, [e, { kind: 'const', t: scalarT(gamma) }])];
  },
  Softplus: simple(() => new Softplus()),
  HardSigmoid: (ctx) => {
    const alpha = ctx.float('alpha', 0.2);
    const beta = ctx.float('beta', 0.5);
    if (Math.abs(alpha - 1 / 6) < 1e-7 && beta === 0.5) return [ctx.module(new Hardsigmoid(), [ctx.input(0)])];
    return [ctx.fn(onnxHardSigmoid, [ctx.input(0), alpha, beta])];
  },
  HardSwish: simple(() => new Hardswish()),
  Gelu: geluOp,
  Softmax: softmaxLike(false),
  LogSoftmax: softmaxLike(true),
  LayerNormalization: layerNormalization,
  MaxPool: maxPool,
  AveragePool: averagePool,
  GlobalAveragePool: (ctx) =>
    ctx.ex(0).ndim === 4
      ? [ctx.module(new AdaptiveAvgPool2d(1), [ctx.input(0)])]
      : [
          ctx.fn(onnxReduce, [
            ctx.input(0),
            'mean',
            ctx
              .ex(0)
              .shape.slice(2)
              .map((_, i) => i + 2),
            true,
          ]),
        ],
  GlobalMaxPool: (ctx) => [ctx.fn(onnxGlobalMaxPool, [ctx.input(0)])],
  Resize: resize,
  Upsample: resize,
  Flatten: (ctx) => {
    const axis = ctx.int('axis', 1);
    if (axis === 1 && ctx.ex(0).ndim >= 2) return [ctx.module(new Flatten(), [ctx.input(0)])];
    return [ctx.fn(onnxFlatten, [ctx.input(0), axis])];
  },
};
