import { Module } from '@qtk/nn';
import type { QuantDType } from '@qtk/spec';
import { DTypeError, InvalidArgumentError, Tensor } from '@qtk/tensor';
import type { SuminPlan } from '../bias.js';
import { intConv, intConvTranspose } from '../int-conv.js';
import { intLinear } from '../int-matmul.js';
import { requantizeInto, type RequantizePlan } from '../requantize.js';
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
  readonly config: Readonly<FixedConvConfig>;

  constructor(config: FixedConvConfig) {
    super();
    if (config.weight.dtype !== 'int8') throw new DTypeError(`FixedConv: the weight must be int8, got ${config.weight.dtype}`);
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
      throw new InvalidArgumentError(`FixedConv: ${cfg.sumin ? 'fused with an add, it takes (x, other)' : 'not fused with an add, it takes one input'}`);
    }
    const accT =
      cfg.kind === 'linear'
        ? intLinear(x.data, cfg.weight)
        : cfg.kind === 'conv'
          ? intConv(x.data, cfg.weight, cfg.attrs as Required<Pick<FixedConvAttrs, 'stride' | 'padding' | 'dilation' | 'groups'>>)
          : intConvTranspose(x.data, cfg.weight, cfg.attrs as Required<FixedConvAttrs>);
    const shape = accT.shape;
    const acc = accT.values() as Int32Array;
    const channels = this.outChannels;
    const inner = cfg.kind === 'linear' ? 1 : acc.length / (shape[0]! * channels);
    if (cfg.bias || cfg.sumin) {
      const e = other ? other.ints() : null;
      if (e && e.length !== acc.length) {
        throw new InvalidArgumentError(`FixedConv: the added input has ${e.length} values, the conv output ${acc.length}; shapes [${other!.shape}] and [${shape}] must match`);
      }
      const sm = cfg.sumin;
      for (let start = 0, c = 0; start < acc.length; start += inner, c = (c + 1) % channels) {
        const b = cfg.bias ? cfg.bias[c]! : 0;
        const sc = sm ? (sm.m.length === 1 ? 0 : c) : 0;
        const k = sm ? sm.k[sc]! : 0;
        const m = sm ? sm.m[sc]! : 0;
        const n = sm ? sm.n[sc]! : 0;
        const half = n === 0 ? 0 : 2 ** (n - 1);
        const inv = 2 ** -n;
        const big = k >= 0 ? m * 2 ** k : 0;
        const end = start + inner;
        for (let i = start; i < end; i++) {
          let v = acc[i]! + b;
          v = v < I32_MIN ? I32_MIN : v > I32_MAX ? I32_MAX : v;
          if (e) {
            // suminTerm inlined: shrR(e·m, n), or e·mult·2^k when s_e/s_acc >= 32767
            v += k < 0 ? Math.floor((e[i]! * m + half) * inv) : e[i]! * big;
            v = v < I32_MIN ? I32_MIN : v > I32_MAX ? I32_MAX : v;
          }
          acc[i] = v;
        }
      }
    }
    if (!cfg.requant) {
      if (cfg.activation) for (let i = 0; i < acc.length; i++) if (acc[i]! < 0) acc[i] = 0;
      return new QTensor(accT, cfg.outScale, 'qint32', cfg.kind === 'linear' ? shape.length - 1 : 1);
    }
    const dtype: QuantDType = cfg.requant.outDtype;
    const out = dtype === 'qint8' ? new Int8Array(acc.length) : dtype === 'qint16' ? new Int16Array(acc.length) : new Int32Array(acc.length);
    requantizeInto(acc, cfg.requant, inner, out);
    if (cfg.activation) {
      const hi = cfg.activation === 'relu6' ? cfg.relu6Max : Infinity;
      for (let i = 0; i < out.length; i++) {
        const v = out[i]!;
        if (v < 0) out[i] = 0;
        else if (v > hi) out[i] = hi;
      }
    }
    const storage = dtype === 'qint8' ? 'int8' : dtype === 'qint16' ? 'int16' : 'int32';
    return new QTensor(new Tensor({ data: out, shape: [...shape], dtype: storage }), cfg.outScale, dtype);
  }

  override extraRepr(): string {
    const c = this.config;
    return `${c.kind}, out=${c.requant ? c.requant.outDtype : 'qint32 (high precision)'}${c.bias ? ', bias' : ''}${c.sumin ? ', sumin' : ''}${c.activation ? `, ${c.activation}` : ''}`;
  }
}
