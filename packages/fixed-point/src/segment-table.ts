// The int16-input segment lookup table of march-semantics.md §1 "Nonlinear functions".
// The points the spec leaves open are decided here, each in one place, and documented in
// docs/march-numerics.md ("Tables and segment tables"):
//   - fittedGrid():   the grid range fitted ([-32768, 32767], [0, 32767] for odd functions)
//   - activeRange():  where d[0] and d[6] go (the ends of the non-constant part of the output),
//                     narrowed to a user's inputRange (tableRange())
//   - dividePoints(): even and curvature-share dividing points, snapped to the input grid, or a
//                     user's explicit points (explicitPoints())
//   - lineThrough():  line segments, including degenerate ones (one point)
//   - segmentY16():   segment choice, degenerate table segments, T[64] := T[63]
//   - evalSegment():  mirroring of odd functions, -32768 included
import { InvalidArgumentError } from '@qtk/tensor';
import { fitMul } from './fit-mul.js';
import { clampInt, rhu, sat, shrR } from './integer-math.js';
import { float32Scale, gridValue } from './lookup-table.js';
import type { NonlinearFunction } from './nonlinear-functions.js';
import type { ObserverDType } from '@qtk/spec';

export type SegmentDividing = 'even' | 'curvature';

/** How the dividing points are chosen: a strategy, or the seven points d[0..6] in input units. */
export type SegmentDividingOption = SegmentDividing | readonly number[];

/** A line segment on the output grid: `y16 = shrR(x·sign·alpha + beta, r)`. */
export interface SegmentLine {
  readonly alpha: number;
  readonly sign: 1 | -1;
  readonly r: number;
  readonly beta: number;
}

/** A table segment's index multiplier: `u = clamp(shrR((x − B[k−1])·alpha, r), 0, 63·256)`. */
export interface SegmentIndex {
  readonly alpha: number;
  readonly r: number;
}

/** A built segment table: plain data (JSON-serializable), evaluated by evalSegment / applySegmentTable. */
export interface SegmentTableV1 {
  readonly version: 1;
  /** The catalogue name of the function tabulated. */
  readonly function: string;
  /** float32 input and output scales; `sO` is the scale of the int16 table grid (sOut, or sOut/256 for int8 output). */
  readonly sIn: number;
  readonly sOut: number;
  readonly sO: number;
  readonly outDtype: ObserverDType;
  /** The strategy that placed B[1..5], or 'explicit' for dividing points given by the user. */
  readonly dividing: SegmentDividing | 'explicit';
  /** The input range the six tables were restricted to, when one was given (input units). */
  readonly inputRange?: readonly [number, number];
  /** Odd function: only x >= 0 is fitted, negative inputs mirror. */
  readonly odd: boolean;
  /** B[0..7] on the int16 input grid, non-decreasing, B[7] = 32767. */
  readonly B: readonly number[];
  /** Six tables (segments 1..6) of 64 int16 entries each. */
  readonly tables: readonly (readonly number[])[];
  readonly index: readonly SegmentIndex[];
  /** The line segments 0 (x <= B[0]) and 7 (x > B[6]). */
  readonly lines: readonly [SegmentLine, SegmentLine];
  readonly flags: {
    /** Some fitMul saturated (a line steeper than 32767 output steps per input step). */
    readonly multiplierSaturated: boolean;
    /** Table segments k with B[k] == B[k−1]: no input selects them. */
    readonly degenerateSegments: readonly number[];
  };
}

export interface SegmentTableOptions {
  sIn: number;
  sOut: number;
  outDtype: ObserverDType;
  /** 'even' (default), 'curvature', or the seven dividing points d[0..6] in input units, non-decreasing. */
  dividing?: SegmentDividingOption;
  /**
   * [lo, hi] in input units: the six tables cover only this part of the input (where the data is),
   * the two line segments the rest. Odd functions fit |x|, so [0, max(|lo|, |hi|)] is used.
   * Not with explicit dividing points (they fix the range).
   */
  inputRange?: readonly [number, number];
}

const Q16_MIN = -32768;
const Q16_MAX = 32767;
const FRAC = 256;
const TOP = 63 * FRAC;

/** [choice] The fitted input grid: all of int16, or x >= 0 for odd functions. */
function fittedGrid(odd: boolean): { qlo: number; qhi: number } {
  return { qlo: odd ? 0 : Q16_MIN, qhi: Q16_MAX };
}

/**
 * [choice] d[0] and d[6] bound the part of the input grid where the rounded, saturated output
 * g(q) = sat(rhu(f(q·s_in)/s_o), qint16) changes: qa is the last point of the constant run at the
 * left end, qb the first point of the constant run at the right end. The line segments take the
 * constant tails (saturated or flat) and the six tables the rest.
 */
function activeRange(g: Int32Array, qlo: number): { qa: number; qb: number } {
  const n = g.length;
  let a = 0;
  while (a < n - 1 && g[a + 1] === g[0]) a++;
  let b = n - 1;
  while (b > a && g[b - 1] === g[n - 1]) b--;
  return { qa: qlo + a, qb: qlo + b };
}

/**
 * [choice] B[0] = qa, B[6] = qb; B[1..5] evenly spaced (rhu in grid units), or 'curvature': at
 * equal shares of Σ √|G(q+1) − 2G(q) + G(q−1)| over (qa, qb), G the clamped, unrounded output
 * f/s_o, i.e. of ∫√|f''|, the knot density that equalises linear-interpolation error (plain
 * ∫|f''| crowds all points at poles; docs/march-numerics.md has both measured). Falls back to even
 * when the sum is 0. Dividing points are on the input grid: d[k] = B[k]·s_in.
 */
function dividePoints(G: Float64Array, qlo: number, qa: number, qb: number, dividing: SegmentDividing): number[] {
  const B = [qa, 0, 0, 0, 0, 0, qb, Q16_MAX];
  const even = (): void => {
    for (let k = 1; k <= 5; k++) B[k] = qa + rhu(((qb - qa) * k) / 6);
  };
  if (dividing === 'even') {
    even();
    return B;
  }
  const cum = new Float64Array(qb - qa + 1);
  for (let q = qa + 1; q < qb; q++) {
    const i = q - qlo;
    cum[q - qa] = cum[q - qa - 1]! + Math.sqrt(Math.abs(G[i + 1]! - 2 * G[i]! + G[i - 1]!));
  }
  cum[qb - qa] = cum[qb - qa - 1] ?? 0;
  const total = cum[qb - qa]!;
  if (!(total > 0)) {
    even();
    return B;
  }
  let p = 0;
  for (let k = 1; k <= 5; k++) {
    const share = (total * k) / 6;
    while (cum[p]! < share) p++;
    B[k] = qa + p;
  }
  return B;
}

/**
 * [choice] A user's inputRange on the fitted grid: floor(lo/s_in) .. ceil(hi/s_in), so the tables
 * cover the whole range, clamped to the grid; odd functions fit |x|, so [0, max(|lo|, |hi|)].
 */
function tableRange(
  range: readonly [number, number],
  sIn: number,
  odd: boolean,
  qlo: number,
  qhi: number,
): { lo: number; hi: number } {
  const [a, b] = odd ? [0, Math.max(Math.abs(range[0]), Math.abs(range[1]))] : range;
  return { lo: clampInt(Math.floor(a / sIn), qlo, qhi), hi: clampInt(Math.ceil(b / sIn), qlo, qhi) };
}

/** [choice] Explicit dividing points d[0..6] (input units) on the fitted grid: B[k] = rhu(d[k]/s_in), clamped; B[7] = 32767. */
function explicitPoints(d: readonly number[], sIn: number, qlo: number, qhi: number): number[] {
  return [...d.map((v) => clampInt(rhu(v / sIn), qlo, qhi)), Q16_MAX];
}

function checkDividing(
  op: string,
  fname: string,
  odd: boolean,
  dividing: SegmentDividingOption,
  range: readonly [number, number] | undefined,
): void {
  if (typeof dividing === 'string') {
    if (dividing !== 'even' && dividing !== 'curvature')
      throw new InvalidArgumentError(
        `${op}: dividing must be 'even', 'curvature' or 7 dividing points, got '${dividing}'`,
      );
  } else {
    if (
      !Array.isArray(dividing) ||
      dividing.length !== 7 ||
      dividing.some((v) => typeof v !== 'number' || !Number.isFinite(v))
    ) {
      throw new InvalidArgumentError(
        `${op}: explicit dividing points are 7 finite numbers d[0..6] (input units), got ${JSON.stringify(dividing)}`,
      );
    }
    if (dividing.some((v, k) => k > 0 && v < dividing[k - 1]!))
      throw new InvalidArgumentError(`${op}: dividing points must be non-decreasing, got [${dividing.join(', ')}]`);
    if (odd && dividing[0]! < 0) {
      throw new InvalidArgumentError(
        `${op}: ${fname} is odd, so its table fits x >= 0 and mirrors the rest; give dividing points >= 0, got [${dividing.join(', ')}]`,
      );
    }
    if (range)
      throw new InvalidArgumentError(
        `${op}: give either inputRange or explicit dividing points (they fix the range), not both`,
      );
  }
  if (range !== undefined) {
    const [lo, hi] = Array.isArray(range) ? range : [NaN, NaN];
    if (range.length !== 2 || !Number.isFinite(lo) || !Number.isFinite(hi) || !(lo < hi)) {
      throw new InvalidArgumentError(
        `${op}: inputRange must be [lo, hi] with finite lo < hi, got ${JSON.stringify(range)}`,
      );
    }
  }
}

/**
 * [choice] The line through (x0, G(x0)) and (x1, G(x1)), G = f/s_o clamped to the int16 range
 * (so poles and overflow give finite lines). A one-point segment (x0 == x1) is the constant G(x0).
 */
function lineThrough(G: Float64Array, qlo: number, x0: number, x1: number): { line: SegmentLine; saturated: boolean } {
  const g0 = G[x0 - qlo]!;
  const slope = x1 === x0 ? 0 : (G[x1 - qlo]! - g0) / (x1 - x0);
  const { m, n, saturated } = fitMul(slope, 15, 31);
  const intercept = g0 - slope * x0;
  return { line: { alpha: Math.abs(m), sign: slope < 0 ? -1 : 1, r: n, beta: rhu(intercept * 2 ** n) }, saturated };
}

/** Builds the segment table of `fn` for int16 inputs at scale sIn and an output at scale sOut. */
export function buildSegmentTable(fn: NonlinearFunction, options: SegmentTableOptions): SegmentTableV1 {
  const op = 'buildSegmentTable';
  const sIn = float32Scale(op, 'sIn', options.sIn);
  const sOut = float32Scale(op, 'sOut', options.sOut);
  const { outDtype } = options;
  if (outDtype !== 'qint8' && outDtype !== 'qint16')
    throw new InvalidArgumentError(`${op}: outDtype must be 'qint8' or 'qint16', got '${String(outDtype)}'`);
  const dividing = options.dividing ?? 'even';
  const odd = fn.odd;
  checkDividing(op, fn.name, odd, dividing, options.inputRange);
  const sO = outDtype === 'qint16' ? sOut : sOut / 256;

  const { qlo, qhi } = fittedGrid(odd);
  const n = qhi - qlo + 1;
  const G = new Float64Array(n);
  const g = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    const x = (qlo + i) * sIn;
    const v = fn.f(x) / sO;
    g[i] = gridValue(op, fn.name, x, v, 'qint16');
    G[i] = v < Q16_MIN ? Q16_MIN : v > Q16_MAX ? Q16_MAX : v;
  }
  let B: number[];
  if (typeof dividing !== 'string') B = explicitPoints(dividing, sIn, qlo, qhi);
  else {
    let { qa, qb } = activeRange(g, qlo);
    if (options.inputRange) {
      // no table points where the output is constant anyway; a range wholly inside a constant
      // tail leaves all six tables on one point
      const r = tableRange(options.inputRange, sIn, odd, qlo, qhi);
      qa = clampInt(Math.max(qa, r.lo), r.lo, r.hi);
      qb = clampInt(Math.min(qb, r.hi), qa, r.hi);
    }
    B = dividePoints(G, qlo, qa, qb, dividing);
  }

  const tables: number[][] = [];
  const index: SegmentIndex[] = [];
  const degenerateSegments: number[] = [];
  let multiplierSaturated = false;
  for (let k = 1; k <= 6; k++) {
    const b0 = B[k - 1]!;
    const width = B[k]! - b0;
    const t: number[] = [];
    for (let j = 0; j < 64; j++) {
      const x = (b0 + (j * width) / 63) * sIn;
      t.push(gridValue(op, fn.name, x, fn.f(x) / sO, 'qint16'));
    }
    tables.push(t);
    if (width === 0) {
      degenerateSegments.push(k);
      index.push({ alpha: 0, r: 0 });
    } else {
      const fm = fitMul((63 * FRAC) / width, 15, 31);
      multiplierSaturated ||= fm.saturated;
      index.push({ alpha: fm.m, r: fm.n });
    }
  }
  const l0 = lineThrough(G, qlo, qlo, B[0]!);
  const l7 = lineThrough(G, qlo, B[6]!, qhi);
  multiplierSaturated ||= l0.saturated || l7.saturated;

  return {
    version: 1,
    function: fn.name,
    sIn,
    sOut,
    sO,
    outDtype,
    dividing: typeof dividing === 'string' ? dividing : 'explicit',
    ...(options.inputRange ? { inputRange: [options.inputRange[0], options.inputRange[1]] as const } : {}),
    odd,
    B,
    tables,
    index,
    lines: [l0.line, l7.line],
    flags: { multiplierSaturated, degenerateSegments },
  };
}

function lineY16(l: SegmentLine, x: number): number {
  return shrR(x * l.sign * l.alpha + l.beta, l.r);
}

/**
 * The unsaturated int16-grid value y16 at x (x may be 32768 when mirroring). Segment 0 is
 * x <= B[0], segment k in 1..6 is B[k−1] < x <= B[k], segment 7 is x > B[6]; a degenerate table
 * segment has no x. The interpolation reads T[64] := T[63].
 */
export function segmentY16(table: SegmentTableV1, x: number): number {
  const B = table.B;
  if (x <= B[0]!) return lineY16(table.lines[0], x);
  for (let k = 1; k <= 6; k++) {
    if (x > B[k]!) continue;
    const { alpha, r } = table.index[k - 1]!;
    const T = table.tables[k - 1]!;
    const u = clampInt(shrR((x - B[k - 1]!) * alpha, r), 0, TOP);
    const i = u >> 8;
    const phi = u & (FRAC - 1);
    const ti = T[i]!;
    const tn = i < 63 ? T[i + 1]! : ti;
    return ti + shrR((tn - ti) * phi, 8);
  }
  return lineY16(table.lines[1], x);
}

/**
 * The output integer for input q: y16 (mirrored for odd functions: y16(q) = −y16(−q) for q < 0,
 * −32768 reading y16(32768) from the segment 7 line), then int16 `sat(y16)` or int8
 * `sat(shrR(y16, 8))`.
 */
export function evalSegment(table: SegmentTableV1, q: number): number {
  const y = table.odd && q < 0 ? -segmentY16(table, -q) : segmentY16(table, q);
  return table.outDtype === 'qint16' ? sat(y, 'qint16') : sat(shrR(y, 8), 'qint8');
}

/** Applies a segment table elementwise to int16 inputs; int16 or int8 output per the table. */
export function applySegmentTable(table: SegmentTableV1, q: Int16Array): Int16Array | Int8Array {
  if (table.version !== 1)
    throw new InvalidArgumentError(
      `applySegmentTable: unsupported segment table version ${String(table.version)}; rebuild it with buildSegmentTable`,
    );
  const out = table.outDtype === 'qint16' ? new Int16Array(q.length) : new Int8Array(q.length);
  for (let i = 0; i < q.length; i++) out[i] = evalSegment(table, q[i]!);
  return out;
}
