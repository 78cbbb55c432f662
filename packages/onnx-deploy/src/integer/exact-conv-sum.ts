// The exact integer sum Σ x·w of a conv, transposed conv or linear layer as ONNX float32 Conv /
// ConvTranspose / MatMul nodes. A float32 sum of integers is exact, whatever the runtime's summation
// order, while Σ|x·w| of every output stays within 2^24 (march-numerics.md, "Integer ONNX: conv,
// matmul, average pooling"). The plan is static, from the weight and the largest |x| of the input
// dtype: input channels are cut into chunks whose bound stays within 2^24 (exact-sum.ts's planChunks),
// an int16 input may be split into a signed high byte and an unsigned low byte (x = 256·hi + lo),
// each chunk's float32 result is cast to float64, and the chunks are added there (exact, < 2^53).
import { EXACT_F32_SUM, planChunks, planCost, type FixedConvKind } from '@qtk/fixed-point';
import { Tensor } from '@qtk/tensor';
import { type AttrValue, type OnnxBuilder, DataType } from '@qtk/onnx';
import { binary, cast, clip, doubleScalar, floor } from './int-emit.js';

const I32_MAX = 2147483647;

/** The geometry of the weight, viewed as w(o, c, t): output channel o, group-local input channel c, kernel tap t. */
export interface SumLayer {
  kind: FixedConvKind;
  /** int8 weight values in the layer's layout (conv [Cout, Cin/g, k], convT [Cin, Cout/g, k], linear [Cout, K]). */
  weight: ArrayLike<number>;
  weightShape: readonly number[];
  groups: number;
  /** ONNX attributes of the Conv / ConvTranspose node (unused for linear). */
  attrs: Record<string, AttrValue>;
  /** Storage dtype of the input: int8 or int16. */
  inputDtype: 'int8' | 'int16';
  /** Rank of the input (its channel axis is 1, or the last for linear). */
  inputRank: number;
}

interface Geometry {
  outChannels: number;
  /** Group-local input channels (K for linear). */
  cinG: number;
  kvol: number;
  /** Flat index of w(o, c, t) in the weight. */
  at(o: number, c: number, t: number): number;
}

function geometryOf(l: SumLayer): Geometry {
  const s = l.weightShape;
  const g = l.groups;
  if (l.kind === 'linear') {
    const [cout, k] = [s[0]!, s[1]!];
    return { outChannels: cout, cinG: k, kvol: 1, at: (o, c) => o * k + c };
  }
  const kvol = s.slice(2).reduce((p, d) => p * d, 1);
  if (l.kind === 'conv') {
    const cinG = s[1]!;
    return { outChannels: s[0]!, cinG, kvol, at: (o, c, t) => (o * cinG + c) * kvol + t };
  }
  const cinG = s[0]! / g;
  const coutG = s[1]!;
  return {
    outChannels: coutG * g,
    cinG,
    kvol,
    at: (o, c, t) => ((Math.floor(o / coutG) * cinG + c) * coutG + (o % coutG)) * kvol + t,
  };
}

/** A chunk: weight units [u0, u1) (unit u = c·kvol + t), read from input channels [c0, c1) of every group. */
interface Chunk {
  c0: number;
  c1: number;
  u0: number;
  u1: number;
}

export interface SumPlan {
  split: boolean;
  chunks: Chunk[];
  /** Largest Σ|x·w| of one output over all chunks (the dtype's worst case). */
  bound: number;
}

/** Largest |part| of each part of the input: the value, or [|hi|, lo] when split. */
function partMaxima(dtype: 'int8' | 'int16', split: boolean): number[] {
  if (split) return [128, 255];
  return [dtype === 'int8' ? 128 : 32768];
}

/**
 * Plans chunks over whole input channels (Σ_t |w(o, c, t)| per channel), trying the byte split for
 * int16 and keeping the cheaper plan (exact-sum.ts's planCost); when one channel's kernel alone
 * exceeds 2^24 for every choice, plans over single taps instead (a chunk then masks the taps it
 * does not own). One tap is at most 32768·128 < 2^24, so that plan always exists.
 */
export function planSum(l: SumLayer): SumPlan {
  const g = geometryOf(l);
  const { outChannels, cinG, kvol } = g;
  const w = l.weight;
  const l1 = Array.from({ length: outChannels }, (_, o) => {
    const row = new Float64Array(cinG);
    for (let c = 0; c < cinG; c++) {
      let s = 0;
      for (let t = 0; t < kvol; t++) s += Math.abs(w[g.at(o, c, t)]!);
      row[c] = s;
    }
    return row;
  });
  const maxAbs = l.inputDtype === 'int8' ? 128 : 32768;
  const bound = Math.max(0, ...l1.map((row) => row.reduce((p, v) => p + v, 0) * maxAbs));
  const splits = l.inputDtype === 'int16' ? [false, true] : [false];
  let best: SumPlan | null = null;
  let bestCost = Infinity;
  const consider = (split: boolean, ends: number[] | null, perTap: boolean) => {
    if (!ends) return;
    const cost = planCost(split ? 2 : 1, ends.length);
    if (cost >= bestCost) return;
    bestCost = cost;
    let start = 0;
    const chunks = ends.map((end) => {
      const ch = perTap
        ? { c0: Math.floor(start / kvol), c1: Math.ceil(end / kvol), u0: start, u1: end }
        : { c0: start, c1: end, u0: start * kvol, u1: end * kvol };
      start = end;
      return ch;
    });
    best = { split, chunks, bound };
  };
  for (const split of splits) {
    const rows = l1.flatMap((row) => partMaxima(l.inputDtype, split).map((m) => row.map((v) => v * m)));
    consider(split, planChunks(rows, cinG, EXACT_F32_SUM), false);
  }
  if (!best) {
    for (const split of splits) {
      const rows: Float64Array[] = [];
      for (let o = 0; o < outChannels; o++) {
        for (const m of partMaxima(l.inputDtype, split)) {
          const row = new Float64Array(cinG * kvol);
          for (let c = 0; c < cinG; c++)
            for (let t = 0; t < kvol; t++) row[c * kvol + t] = Math.abs(w[g.at(o, c, t)]!) * m;
          rows.push(row);
        }
      }
      consider(split, planChunks(rows, cinG * kvol, EXACT_F32_SUM), true);
    }
  }
  return best!;
}

/** The float32 weight of one chunk in the layout of its ONNX node, taps outside [u0, u1) zeroed. */
function chunkWeight(l: SumLayer, g: Geometry, ch: Chunk): Tensor {
  const { c0, c1, u0, u1 } = ch;
  const cc = c1 - c0;
  const { kvol, outChannels } = g;
  const w = l.weight;
  const owned = (c: number, t: number) => {
    const u = c * kvol + t;
    return u >= u0 && u < u1;
  };
  if (l.kind === 'linear') {
    // MatMul's right operand: [K chunk, Cout]
    const data = new Float32Array(cc * outChannels);
    for (let c = c0; c < c1; c++)
      for (let o = 0; o < outChannels; o++) data[(c - c0) * outChannels + o] = w[g.at(o, c, 0)]!;
    return new Tensor({ data, shape: [cc, outChannels], dtype: 'float32' });
  }
  const kernel = l.weightShape.slice(2);
  const data = new Float32Array(outChannels * cc * kvol);
  if (l.kind === 'conv') {
    for (let o = 0; o < outChannels; o++)
      for (let c = c0; c < c1; c++)
        for (let t = 0; t < kvol; t++) if (owned(c, t)) data[(o * cc + c - c0) * kvol + t] = w[g.at(o, c, t)]!;
    return new Tensor({ data, shape: [outChannels, cc, ...kernel], dtype: 'float32' });
  }
  const coutG = l.weightShape[1]!;
  for (let o = 0; o < outChannels; o++) {
    const gi = Math.floor(o / coutG);
    for (let c = c0; c < c1; c++)
      for (let t = 0; t < kvol; t++)
        if (owned(c, t)) data[((gi * cc + c - c0) * coutG + (o % coutG)) * kvol + t] = w[g.at(o, c, t)]!;
  }
  return new Tensor({ data, shape: [l.groups * cc, coutG, ...kernel], dtype: 'float32' });
}

/** Input channels [c0, c1) of every group of a float32 value (the whole value when that is all of them). */
function chunkInput(b: OnnxBuilder, l: SumLayer, g: Geometry, x: string, ch: Chunk, name: string): string {
  const { c0, c1 } = ch;
  if (c0 === 0 && c1 === g.cinG) return x;
  const axis = l.kind === 'linear' ? l.inputRank - 1 : 1;
  if (l.groups === 1) {
    return b.node(
      'Slice',
      [x, b.intConst([c0], `${name}_start`), b.intConst([c1], `${name}_end`), b.intConst([axis], `${name}_axes`)],
      name,
    )[0]!;
  }
  const idx: number[] = [];
  for (let gi = 0; gi < l.groups; gi++) for (let c = c0; c < c1; c++) idx.push(gi * g.cinG + c);
  return b.node('Gather', [x, b.intConst(idx, `${name}_idx`)], name, { axis })[0]!;
}

/**
 * Emits Σ x·w of every output as exact float64 integers and returns that value with a bound on
 * its magnitude; the sum is already saturated to int32 (as QTK's intConv / intLinear) when the
 * bound could exceed it. `bias` (per output channel) is added inside the Conv when that is exact
 * (`withBias`; no saturation can then occur), else left to the caller.
 */
export function emitExactSum(
  b: OnnxBuilder,
  x: string,
  l: SumLayer,
  name: string,
  bias: Int32Array | null = null,
): { acc: string; bound: number; withBias: boolean } {
  const g = geometryOf(l);
  const plan = planSum(l);
  // One float32 Conv adds the bias too when every partial sum, bias included, stays within 2^24.
  const maxBias = bias ? Math.max(0, ...Array.from(bias, Math.abs)) : 0;
  const withBias =
    bias !== null &&
    l.kind !== 'linear' &&
    !plan.split &&
    plan.chunks.length === 1 &&
    plan.bound + maxBias <= EXACT_F32_SUM;
  const xf = cast(b, x, DataType.FLOAT, `${name}_x_f32`);
  const parts: { v: string; scale: number }[] = [];
  if (plan.split) {
    const hi = floor(
      b,
      b.node('Mul', [xf, b.floatConst([1 / 256], `${name}_inv256`, [])], `${name}_x_div`)[0]!,
      `${name}_x_hi`,
    );
    const lo = b.node(
      'Sub',
      [xf, b.node('Mul', [hi, b.floatConst([256], `${name}_256`, [])], `${name}_x_hi256`)[0]!],
      `${name}_x_lo`,
    )[0]!;
    parts.push({ v: hi, scale: 256 }, { v: lo, scale: 1 });
  } else parts.push({ v: xf, scale: 1 });
  let acc: string | null = null;
  plan.chunks.forEach((ch, k) => {
    const tag = plan.chunks.length === 1 ? '' : `_c${k}`;
    const wName = b.tensor(chunkWeight(l, g, ch), `${name}_w${tag}`);
    parts.forEach((p, pi) => {
      const ptag = `${tag}${parts.length === 1 ? '' : pi === 0 ? '_hi' : '_lo'}`;
      const xc = chunkInput(b, l, g, p.v, ch, `${name}_x${ptag}`);
      const y =
        l.kind === 'linear'
          ? b.node('MatMul', [xc, wName], `${name}_matmul${ptag}`)[0]!
          : b.node(
              l.kind === 'conv' ? 'Conv' : 'ConvTranspose',
              withBias ? [xc, wName, b.floatConst(Array.from(bias!), `${name}_bias`)] : [xc, wName],
              `${name}_conv${ptag}`,
              l.attrs,
            )[0]!;
      let yd = cast(b, y, DataType.DOUBLE, `${name}_sum${ptag}`);
      if (p.scale !== 1)
        yd = binary(b, 'Mul', yd, doubleScalar(b, p.scale, `${name}_scale${ptag}`), `${name}_sum${ptag}_scaled`);
      acc = acc === null ? yd : binary(b, 'Add', acc, yd, `${name}_acc${ptag}`);
    });
  });
  let out = acc!;
  if (plan.bound > I32_MAX) out = clip(b, out, -2147483648, I32_MAX, `${name}_acc_i32`);
  return { acc: out, bound: Math.min(plan.bound + (withBias ? maxBias : 0), I32_MAX), withBias };
}
