import { Module } from '@qtk/nn';
import { QUANT_STORAGE_DTYPE, type QuantDType } from '@qtk/spec';
import {
  DTypeError,
  InvalidArgumentError,
  REQUANTIZE_MAX_MULTIPLIER,
  requantizeInt32,
  Tensor,
  type RequantizeInt32Options,
} from '@qtk/tensor';
import type { SuminPlan } from '../bias.js';
import { intConv, intConvRequantized, intConvTranspose } from '../int-conv.js';
import { intLinear } from '../int-matmul.js';
import type { RequantizePlan } from '../requantize.js';
import { intRange } from '../integer-math.js';
import { QTensor } from '../qtensor.js';

export type FixedConvKind = 'conv' | 'conv_transpose' | 'linear';

export interface FixedConvAttrs {
  stride?: number[];
  padding?: number[];
  dilation?: number[];
  groups?: number;
  outputPadding?: number[];
}

export interface FixedConvConfig {
  kind: FixedConvKind;
  /** int8 weight, per-output-channel quantized (the float layer's layout). */
  weight: Tensor;
  attrs: FixedConvAttrs;
  /** Integer added to each output channel's accumulator (already in accumulator units); null: no bias. */
  bias: Int32Array | null;
  /** The fused add of a second input; null when the conv was not fused with an add. */
  sumin: SuminPlan | null;
  /** Requantize to the output; null for a high-precision (int32) output. */
  requant: RequantizePlan | null;
  /** Output scale: one value, or s_acc per channel for a high-precision output. */
  outScale: Float32Array;
  activation: 'relu' | 'relu6' | null;
  /** Upper clamp of a fused ReLU6 on the output grid, rhu(6 / s_out). */
  relu6Max: number;
}

const I32_MIN = -2147483648;
const I32_MAX = 2147483647;

/**
 * The conv family in fixed point (march-semantics.md §1): exact int32 accumulation, bias, the
 * fused add ("sumin"), requantize, then the fused ReLU / ReLU6 clamp. Without a requantize plan the
 * output is the int32 accumulator at the per-channel scale s_acc (a high-precision output).
 */
export class FixedConv extends Module {
  static override readonly takesQuantizedValues = true;

  readonly config: Readonly<FixedConvConfig>;

  constructor(config: FixedConvConfig) {
    super();
    if (config.weight.dtype !== 'int8')
      throw new DTypeError(`FixedConv: the weight must be int8, got ${config.weight.dtype}`);
    this.config = config;
    this.registerBuffer('weight', config.weight);
  }

  get outChannels(): number {
    const w = this.config.weight;
    return this.config.kind === 'conv_transpose' ? w.shape[1]! * (this.config.attrs.groups ?? 1) : w.shape[0]!;
  }

  forward(x: QTensor, other?: QTensor): QTensor {
    const cfg = this.config;
    if (!(x instanceof QTensor)) throw new DTypeError(`FixedConv: expected a quantized input, got ${typeof x}`);
    if ((cfg.sumin !== null) !== (other !== undefined)) {
      throw new InvalidArgumentError(
        `FixedConv: ${cfg.sumin ? 'fused with an add, it takes (x, other)' : 'not fused with an add, it takes one input'}`,
      );
    }
    const axis = cfg.requant ? -1 : cfg.kind === 'linear' ? x.data.ndim - 1 : 1;
    const outDtype = cfg.requant ? cfg.requant.outDtype : 'qint32';
    const epi = epilogueOptions(cfg, other ? other.data : null);
    if (epi && cfg.kind === 'conv') {
      // On an integer conv kernel the backend requantizes before the sums leave its memory.
      const fused = intConvRequantized(x.data, cfg.weight, cfg.attrs, epi, other ? other.data : null);
      if (fused) return new QTensor(fused, cfg.outScale, outDtype, axis);
    }
    const accT =
      cfg.kind === 'linear'
        ? intLinear(x.data, cfg.weight)
        : cfg.kind === 'conv'
          ? intConv(
              x.data,
              cfg.weight,
              cfg.attrs as Required<Pick<FixedConvAttrs, 'stride' | 'padding' | 'dilation' | 'groups'>>,
            )
          : intConvTranspose(x.data, cfg.weight, cfg.attrs as Required<FixedConvAttrs>);
    const shape = accT.shape;
    const acc = accT.values() as Int32Array;
    const e = other ? other.ints() : null;
    if (e && e.length !== acc.length) {
      throw new InvalidArgumentError(
        `FixedConv: the added input has ${e.length} values, the conv output ${acc.length}; shapes [${other!.shape}] and [${shape}] must match`,
      );
    }
    const channels = this.outChannels;
    const inner = cfg.kind === 'linear' ? 1 : acc.length / (shape[0]! * channels);
    if (epi)
      return new QTensor(
        requantizeInt32(accT, other ? other.data : null, { ...epi, channels, inner }),
        cfg.outScale,
        outDtype,
        axis,
      );
    if (!cfg.requant) {
      convEpilogue(cfg, acc, e, inner, channels, acc);
      return new QTensor(accT, cfg.outScale, 'qint32', cfg.kind === 'linear' ? shape.length - 1 : 1);
    }
    const dtype: QuantDType = cfg.requant.outDtype;
    const out =
      dtype === 'qint8'
        ? new Int8Array(acc.length)
        : dtype === 'qint16'
          ? new Int16Array(acc.length)
          : new Int32Array(acc.length);
    convEpilogue(cfg, acc, e, inner, channels, out);
    return new QTensor(
      new Tensor({ data: out, shape: [...shape], dtype: QUANT_STORAGE_DTYPE[dtype] }),
      cfg.outScale,
      dtype,
    );
  }

  override extraRepr(): string {
    const c = this.config;
    return `${c.kind}, out=${c.requant ? c.requant.outDtype : 'qint32 (high precision)'}${c.bias ? ', bias' : ''}${c.sumin ? ', sumin' : ''}${c.activation ? `, ${c.activation}` : ''}`;
  }
}

const INT_STORAGE = new Set(['int8', 'int16', 'int32']);
const withinMultiplier = (v: Int32Array): boolean => v.every((x) => Math.abs(x) <= REQUANTIZE_MAX_MULTIPLIER);

/**
 * The epilogue as options of the backend's RequantizeInt32 op (wasm when loaded), or null when the
 * op cannot express it (an output dtype other than qint8/16/32, a multiplier beyond 2^16): convEpilogue then.
 */
function epilogueOptions(
  cfg: FixedConvConfig,
  other: Tensor | null,
): Omit<RequantizeInt32Options, 'channels' | 'inner'> | null {
  const plan = cfg.requant;
  const outDtype = plan ? QUANT_STORAGE_DTYPE[plan.outDtype] : 'int32';
  if (!outDtype || (other && !INT_STORAGE.has(other.dtype))) return null;
  if ((plan && !withinMultiplier(plan.m)) || (cfg.sumin && !withinMultiplier(cfg.sumin.m))) return null;
  const range = plan ? intRange(plan.outDtype) : { min: I32_MIN, max: I32_MAX };
  const lo = cfg.activation ? Math.max(0, range.min) : range.min;
  const hi = cfg.activation === 'relu6' && plan ? Math.max(lo, Math.min(range.max, cfg.relu6Max)) : range.max;
  return {
    bias: cfg.bias,
    sumin: cfg.sumin,
    plan: plan ? { rule: plan.rule, pre: plan.pre, m: plan.m, n: plan.n } : null,
    lo,
    hi,
    outDtype,
  };
}

/**
 * The conv epilogue in one pass over [outer, channels, inner]: `+ bias` (int32 saturation), `+ sumin
 * term` (int32 saturation), then requantize (the plan's rule) and the fused ReLU / ReLU6 clamp; with
 * no plan (high precision) the int32 sum, clamped at 0 under a fused ReLU. Same integers as
 * requantizeInto followed by the clamp (docs/march-numerics.md, "Saturation order").
 */
function convEpilogue(
  cfg: FixedConvConfig,
  acc: Int32Array,
  e: ArrayLike<number> | null,
  inner: number,
  channels: number,
  out: Int8Array | Int16Array | Int32Array,
): void {
  const plan = cfg.requant;
  const sm = cfg.sumin;
  const range = plan ? intRange(plan.outDtype) : { min: I32_MIN, max: I32_MAX };
  const lo = cfg.activation ? Math.max(0, range.min) : range.min;
  const hi = cfg.activation === 'relu6' && plan ? Math.min(range.max, cfg.relu6Max) : range.max;
  const int16 = plan?.rule === 'int16_intermediate';
  for (let start = 0, c = 0; start < acc.length; start += inner, c = (c + 1) % channels) {
    const b = cfg.bias ? cfg.bias[c]! : 0;
    const sc = sm && sm.m.length !== 1 ? c : 0;
    const sk = sm ? sm.k[sc]! : 0;
    const sMul = sm ? sm.m[sc]! : 0;
    const sN = sm ? sm.n[sc]! : 0;
    const sHalf = sN === 0 ? 0 : 2 ** (sN - 1);
    const sInv = 2 ** -sN;
    const sBig = sk >= 0 ? sMul * 2 ** sk : 0;
    const pc = plan && plan.m.length !== 1 ? c : 0;
    const preScale = plan ? 2 ** -plan.pre[pc]! : 1;
    const m = plan ? plan.m[pc]! : 1;
    const n = plan ? plan.n[pc]! : 0;
    const half = n === 0 ? 0 : 2 ** (n - 1);
    const inv = 2 ** -n;
    const end = start + inner;
    for (let i = start; i < end; i++) {
      let v = acc[i]! + b;
      v = v < I32_MIN ? I32_MIN : v > I32_MAX ? I32_MAX : v;
      if (e) {
        // shrR(e·m, n), or e·mult·2^k when s_e/s_acc >= 32767
        v += sk < 0 ? Math.floor((e[i]! * sMul + sHalf) * sInv) : e[i]! * sBig;
        v = v < I32_MIN ? I32_MIN : v > I32_MAX ? I32_MAX : v;
      }
      if (plan) {
        let t = preScale === 1 ? v : Math.floor(v * preScale);
        if (int16) t = t < -32768 ? -32768 : t > 32767 ? 32767 : t;
        v = Math.floor((t * m + half) * inv);
      }
      out[i] = v < lo ? lo : v > hi ? hi : v;
    }
  }
}
