// getRawFeatures: the statistics of every node's output for one input (range, moments, histogram,
// the share clipped by the node's scale, outliers), to judge whether its quantization fits its data.
import type { GraphModule } from '@qtk/ir';
import { countClamped } from '@qtk/fake-quant';
import { closeNames, InvalidArgumentError, Tensor } from '@qtk/tensor';
import { argsOf, type ModelInputs } from './model-inputs.js';
import { captureNodeValues, type NodeValue, scaleAt } from './node-values.js';
import { nodeTypeOf } from './node-type.js';

export interface RawFeaturesOptions {
  /** Only nodes whose display name starts with one of these (horizon_plugin_pytorch's `prefixes`). */
  readonly prefixes?: readonly string[];
  /** Only nodes of these types, as `nodeTypeOf` names them (e.g. 'QAT(Conv2d)', 'FixedConv', 'add'). */
  readonly types?: readonly string[];
  /** Leave out Identity modules (default false). */
  readonly skipIdentity?: boolean;
  /** Histogram bins over [min, max] (default 64). */
  readonly bins?: number;
  /** Also give min / max / mean / abs-max per channel (the quantization axis, else axis 1). Default false. */
  readonly perChannel?: boolean;
  /** Statistics of a quantized node on its integers (value / scale) instead of its real values (horizon_plugin_pytorch's `preserve_int`). Default false. */
  readonly preserveInt?: boolean;
  /** A node is an outlier node when its abs-max exceeds this many times the 99th percentile of its non-zero |v| (default 4). */
  readonly outlierRatio?: number;
}

export interface Histogram {
  /** bins + 1 edges, from min to max. */
  readonly edges: readonly number[];
  /** Values per bin; the last bin includes max. */
  readonly counts: readonly number[];
}

export interface ChannelFeatures {
  readonly channel: number;
  readonly min: number;
  readonly max: number;
  readonly mean: number;
  readonly absMax: number;
}

export interface Outlier {
  /** Whether abs-max > outlierRatio × p99 (needs at least OUTLIER_MIN_VALUES non-zero values). */
  readonly flagged: boolean;
  readonly absMax: number;
  /** 99th percentile of the non-zero |v|; null when there are none. */
  readonly p99: number | null;
  /** absMax / p99; null when p99 is null. */
  readonly ratio: number | null;
}

export interface NodeFeatures {
  /** Position among the reported nodes, in execution order. */
  readonly index: number;
  readonly name: string;
  readonly type: string;
  readonly shape: readonly number[];
  /** The node's quantized type (qint8 / qint16 / qint32 / qbool), or 'float32' for a float output. */
  readonly dtype: string;
  /** The output scale(s) (one, or one per channel along `axis`); null for a float output. */
  readonly scale: readonly number[] | null;
  readonly axis: number;
  /** Values counted (finite ones); NaN and ±Infinity are counted in `nonFinite` and left out of every statistic. */
  readonly count: number;
  readonly nonFinite: number;
  /** null when no value is finite. */
  readonly min: number | null;
  readonly max: number | null;
  readonly mean: number | null;
  /** Population variance (divides by the count). */
  readonly variance: number | null;
  readonly absMean: number | null;
  readonly histogram: Histogram;
  /** Share of values at or beyond the clipping bounds quantMin·scale / quantMax·scale; null for a float or boolean output. */
  readonly saturation: number | null;
  readonly outlier: Outlier;
  /** Per-channel statistics (option `perChannel`), else null. */
  readonly channels: readonly ChannelFeatures[] | null;
}

export interface RawFeatures {
  readonly version: 1;
  readonly nodes: readonly NodeFeatures[];
}

export const DEFAULT_BINS = 64;
export const DEFAULT_OUTLIER_RATIO = 4;
/** Below this many non-zero values a 99th percentile is the maximum itself, so nothing is flagged. */
export const OUTLIER_MIN_VALUES = 100;

/**
 * Share of values clipped by the node's quantization. A value is saturated only when clamping changed
 * it: when the values before quantization are known (a fake-quant's input, a Quantize's float input),
 * those beyond the range by more than half a step; a value exactly at a limit (-1 with scale 1/128) is
 * not. Otherwise, from the output alone (a fixed-point op's integers), the values at the limits:
 * the integer at quantMin or quantMax, or the value at or beyond float32(quantMin·scale) /
 * float32(quantMax·scale), an upper bound.
 */
export function saturationOf(v: NodeValue): number | null {
  const q = v.quant;
  if (!q || q.dtype === 'qbool') return null;
  const n = v.values.length;
  if (n === 0) return 0;
  if (v.preQuant && v.preQuant.length === n) {
    const x = new Tensor({ data: v.preQuant, shape: [...v.shape], dtype: 'float32' });
    const { clamped } = countClamped(x, q.scale, q.scale.length > 1 ? q.axis : -1, q.quantMin, q.quantMax);
    return clamped / n;
  }
  let clipped = 0;
  if (v.ints) {
    for (let i = 0; i < n; i++) {
      const k = v.ints[i]!;
      if (k >= q.quantMax || k <= q.quantMin) clipped++;
    }
    return clipped / n;
  }
  const scale = scaleAt(q, v.shape);
  for (let i = 0; i < n; i++) {
    const s = scale(i);
    const x = v.values[i]!;
    if (x >= Math.fround(q.quantMax * s) || x <= Math.fround(q.quantMin * s)) clipped++;
  }
  return clipped / n;
}

/**
 * The outlier rule: a min-max scale is set by abs-max, so when abs-max is K times the 99th percentile of
 * |v|, 99 % of the values use only 1/K of the integer levels (log2 K bits lost). Zeros are left out (a
 * ReLU output's zeros are exact at any scale and would pull the percentile to 0); a Gaussian tensor
 * gives a ratio near 1.7, a Laplacian one near 2.5, so the default K = 4 flags only heavier tails.
 */
export function outlierOf(values: ArrayLike<number>, ratio: number): Outlier {
  const abs: number[] = [];
  let absMax = 0;
  for (let i = 0; i < values.length; i++) {
    const a = Math.abs(values[i]!);
    if (!Number.isFinite(a) || a === 0) continue;
    abs.push(a);
    if (a > absMax) absMax = a;
  }
  if (abs.length === 0) return { flagged: false, absMax, p99: null, ratio: null };
  abs.sort((a, b) => a - b);
  const p99 = abs[Math.min(abs.length - 1, Math.floor(0.99 * (abs.length - 1)))]!;
  const r = absMax / p99;
  return { flagged: abs.length >= OUTLIER_MIN_VALUES && r > ratio, absMax, p99, ratio: r };
}

function histogramOf(values: ArrayLike<number>, lo: number, hi: number, bins: number): Histogram {
  const width = (hi - lo) / bins;
  const edges = Array.from({ length: bins + 1 }, (_, i) => (i === bins ? hi : lo + i * width));
  const counts = new Array<number>(bins).fill(0);
  for (let i = 0; i < values.length; i++) {
    const x = values[i]!;
    if (!Number.isFinite(x)) continue;
    const b = width > 0 ? Math.min(bins - 1, Math.floor((x - lo) / width)) : 0;
    counts[b]!++;
  }
  return { edges, counts };
}

function channelAxisOf(v: NodeValue): number {
  if (v.quant && v.quant.axis >= 0 && v.quant.scale.length > 1) return v.quant.axis;
  return v.shape.length >= 2 ? 1 : -1;
}

function channelsOf(v: NodeValue, values: ArrayLike<number>): ChannelFeatures[] | null {
  const axis = channelAxisOf(v);
  if (axis < 0) return null;
  const channels = v.shape[axis]!;
  let inner = 1;
  for (let d = axis + 1; d < v.shape.length; d++) inner *= v.shape[d]!;
  const min = new Float64Array(channels).fill(Infinity);
  const max = new Float64Array(channels).fill(-Infinity);
  const sum = new Float64Array(channels);
  const count = new Float64Array(channels);
  for (let i = 0; i < values.length; i++) {
    const x = values[i]!;
    if (!Number.isFinite(x)) continue;
    const c = Math.floor(i / inner) % channels;
    if (x < min[c]!) min[c] = x;
    if (x > max[c]!) max[c] = x;
    sum[c]! += x;
    count[c]!++;
  }
  return Array.from({ length: channels }, (_, c) => {
    const n = count[c]!;
    return n === 0
      ? { channel: c, min: 0, max: 0, mean: 0, absMax: 0 }
      : {
          channel: c,
          min: min[c]!,
          max: max[c]!,
          mean: sum[c]! / n,
          absMax: Math.max(Math.abs(min[c]!), Math.abs(max[c]!)),
        };
  });
}

/** A quantized node's integers: a fixed-point value's own, a fake-quant output divided by its scale. */
function integersOf(v: NodeValue): ArrayLike<number> | null {
  if (!v.quant) return null;
  if (v.ints) return v.ints;
  const scale = scaleAt(v.quant, v.shape);
  return Float64Array.from(v.values, (x, i) => Math.round(x / scale(i)));
}

/** The statistics of one captured node value (index, name and type filled in by the caller). */
export function featuresOf(
  v: NodeValue,
  options: Pick<RawFeaturesOptions, 'bins' | 'perChannel' | 'outlierRatio' | 'preserveInt'> = {},
): Omit<NodeFeatures, 'index' | 'type'> {
  const bins = options.bins ?? DEFAULT_BINS;
  const values = (options.preserveInt ? integersOf(v) : null) ?? v.values;
  let count = 0;
  let min = Infinity;
  let max = -Infinity;
  let sum = 0;
  let absSum = 0;
  for (let i = 0; i < values.length; i++) {
    const x = values[i]!;
    if (!Number.isFinite(x)) continue;
    count++;
    if (x < min) min = x;
    if (x > max) max = x;
    sum += x;
    absSum += Math.abs(x);
  }
  const mean = count ? sum / count : null;
  let sq = 0;
  if (mean !== null)
    for (let i = 0; i < values.length; i++) {
      const x = values[i]!;
      if (Number.isFinite(x)) sq += (x - mean) * (x - mean);
    }
  const q = v.quant;
  return {
    name: v.name,
    shape: v.shape,
    dtype: q?.dtype ?? 'float32',
    scale: q ? [...q.scale] : null,
    axis: q?.axis ?? -1,
    count,
    nonFinite: values.length - count,
    min: count ? min : null,
    max: count ? max : null,
    mean,
    variance: count ? sq / count : null,
    absMean: count ? absSum / count : null,
    histogram: count ? histogramOf(values, min, max, bins) : { edges: [], counts: [] },
    saturation: saturationOf(v),
    outlier: outlierOf(values, options.outlierRatio ?? DEFAULT_OUTLIER_RATIO),
    channels: options.perChannel ? channelsOf(v, values) : null,
  };
}

function checkOptions(options: RawFeaturesOptions): void {
  const bins = options.bins ?? DEFAULT_BINS;
  if (!Number.isInteger(bins) || bins < 1)
    throw new InvalidArgumentError(`getRawFeatures: bins must be a positive integer, got ${bins}`);
  const ratio = options.outlierRatio ?? DEFAULT_OUTLIER_RATIO;
  if (!(ratio >= 1)) throw new InvalidArgumentError(`getRawFeatures: outlierRatio must be at least 1, got ${ratio}`);
}

/** A prefix that no node name starts with would silently select nothing: an error naming the closest names. */
function checkPrefixes(prefixes: readonly string[] | undefined, names: readonly string[]): void {
  for (const p of prefixes ?? []) {
    if (names.some((n) => n.startsWith(p))) continue;
    const close = closeNames(p, names);
    throw new InvalidArgumentError(
      `getRawFeatures: no node name starts with prefix '${p}'${close.length ? `; closest: ${close.join(', ')}` : ''}; node names are module paths (generated ones such as _generated_add_0 included)`,
    );
  }
}

/**
 * Runs `model` (float, calibrated / QAT fake-quant, or fixed point) on `inputs` and returns the
 * statistics of every node's output, in execution order. The model runs in eval mode and is not changed.
 */
export function getRawFeatures(model: GraphModule, inputs: ModelInputs, options: RawFeaturesOptions = {}): RawFeatures {
  checkOptions(options);
  const nodes: NodeFeatures[] = [];
  const captured = captureNodeValues(model, argsOf(inputs));
  checkPrefixes(
    options.prefixes,
    [...captured.values()].map((v) => v.name),
  );
  for (const [node, value] of captured) {
    const type = nodeTypeOf(model, node);
    if (options.prefixes && !options.prefixes.some((p) => value.name.startsWith(p))) continue;
    if (options.types && !options.types.includes(type)) continue;
    if (options.skipIdentity && type === 'Identity') continue;
    nodes.push({ index: nodes.length, type, ...featuresOf(value, options) });
  }
  return { version: 1, nodes };
}
