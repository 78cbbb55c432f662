import type { Node } from '@qtk/ir';
import { InvalidArgumentError, roundingFunction, Tensor } from '@qtk/tensor';
import { UnsupportedOpError, type ConvertNodeContext, type QParams } from '@qtk/spec';
import { planSumin } from '../bias.js';
import { rhu } from '../integer-math.js';
import { FixedConv, type FixedConvKind } from '../modules/fixed-conv.js';
import { opNameOf, type ConvertRule, unsupportedAt } from './march-converter.js';

type ConvOp = 'Conv' | 'ConvTranspose' | 'Gemm';

const KINDS: Readonly<Record<ConvOp, FixedConvKind>> = {
  Conv: 'conv',
  ConvTranspose: 'conv_transpose',
  Gemm: 'linear',
};

/** What a fused module adds to its layer (from ctx.fused): the add, and ReLU / ReLU6 (a Clip to [0, 6]). */
function fusionOf(ctx: ConvertNodeContext): { withAdd: boolean; activation: 'relu' | 'relu6' | null } {
  const f = ctx.fused;
  const act = f?.activation?.op;
  return { withAdd: f?.add != null, activation: act === 'Relu' ? 'relu' : act === 'Clip' ? 'relu6' : null };
}

/** Weights to int8 per output channel: `w_q = sat(R(w / s_w[c]), qint8)` (axis 0, or 1 for conv-transpose). */
export function quantizeWeight(
  w: Tensor,
  qparams: QParams,
  chAxis: number,
  rounding: ConvertNodeContext['rounding'],
): Tensor {
  const v = w.values();
  const shape = w.shape;
  let inner = 1;
  for (let d = chAxis + 1; d < shape.length; d++) inner *= shape[d]!;
  const channels = shape[chAxis]!;
  const s = qparams.scale;
  if (s.length !== 1 && s.length !== channels) {
    throw new InvalidArgumentError(
      `quantizeWeight: ${s.length} weight scales for ${channels} channels along axis ${chAxis}`,
    );
  }
  const q = new Int8Array(v.length);
  const round = roundingFunction(rounding);
  // one run of `inner` values per (outer, channel) block, with its scale read once; sat(·, qint8) written out
  // (a lookup and a call per weight were most of converting a ResNet-18)
  for (let block = 0, i = 0; i < v.length; block++) {
    const scale = Math.fround(s[s.length === 1 ? 0 : block % channels]!);
    for (const end = i + inner; i < end; i++) {
      const r = round(v[i]! / scale);
      q[i] = r < -128 ? -128 : r > 127 ? 127 : r;
    }
  }
  return new Tensor({ data: q, shape: [...shape], dtype: 'int8' });
}

function inputScale(ctx: ConvertNodeContext, arg: unknown, what: string): QParams {
  const q = arg && typeof arg === 'object' ? ctx.qparamsOf(arg as Node) : null;
  if (!q)
    throw new UnsupportedOpError({
      op: opNameOf(ctx),
      node: ctx.node.name,
      march: ctx.march,
      reason: `its ${what} is not quantized`,
    });
  if (q.scale.length !== 1)
    throw new UnsupportedOpError({
      op: opNameOf(ctx),
      node: ctx.node.name,
      march: ctx.march,
      reason: `its ${what} has a per-channel scale`,
    });
  return q;
}

/**
 * Conv / ConvTranspose / Linear modules (by their catalog op, a fused module's being its layer's),
 * optionally fused with BN (folded), an add and ReLU / ReLU6.
 */
function convRuleFor(op: ConvOp): ConvertRule {
  return {
    name: `conv:${op}`,
    ops: [op],
    match: (ctx) => ctx.op === op && ctx.module !== null && ctx.node.method === undefined,
    attrs(ctx) {
      const fused = fusionOf(ctx);
      const a: Record<string, unknown> = { spatialDims: op === 'Gemm' ? 0 : ctx.attrs.spatialDims };
      if (fused.withAdd) a.fusedAdd = true;
      if (fused.activation) a.fusedActivation = fused.activation;
      return a;
    },
    refuse(ctx, env) {
      const fused = fusionOf(ctx);
      const fusable = env.table.ops.find((o) => o.op === env.op)?.fusable ?? [];
      if (fused.withAdd && !fusable.includes('Add')) return `${env.op} cannot be fused with an add on this march`;
      if (fused.activation && !fusable.includes(fused.activation === 'relu' ? 'Relu' : 'Clip'))
        return `${env.op} cannot be fused with ${fused.activation} on this march`;
      return null;
    },
    build(ctx, env) {
      const fused = fusionOf(ctx);
      const fail = (reason: string) => unsupportedAt(ctx, env.march, reason);
      if (!ctx.weight) throw fail('it has no weight fake-quant (prepare it with a qconfig that quantizes weights)');
      const kind = KINDS[op];
      const chAxis = kind === 'conv_transpose' ? 1 : 0;
      const wq = quantizeWeight(ctx.weight.value, ctx.weight.qparams, chAxis, ctx.rounding);
      const sx = Math.fround(inputScale(ctx, ctx.node.args[0], 'input').scale[0]!);
      const sw = ctx.weight.qparams.scale;
      // the layer's geometry, as the op catalog reports it (a fused module's is its layer's)
      const l = ctx.attrs as {
        stride?: number[];
        padding?: number[];
        dilation?: number[];
        groups?: number;
        outputPadding?: number[];
      };
      const groups = l.groups ?? 1;
      const outChannels = kind === 'conv_transpose' ? wq.shape[1]! * groups : wq.shape[0]!;
      const sAcc = new Float64Array(outChannels);
      // a grouped conv-transpose's weight has Cout/groups channels along axis 1: output g·Cout/groups + o has scale o
      for (let c = 0; c < outChannels; c++) sAcc[c] = sx * Math.fround(sw[sw.length === 1 ? 0 : c % sw.length]!);
      const b = ctx.weight.bias;
      const bias = b ? env.numerics.quantizeBias(b.values(), sAcc, ctx.rounding) : null;
      const sumin = fused.withAdd
        ? planSumin(Math.fround(inputScale(ctx, ctx.node.args[1], 'added input').scale[0]!), sAcc)
        : null;
      const out = ctx.outputQparams;
      if (!out && !env.table.highPrecisionOutputDtypes.includes('qint32'))
        throw fail('it has no output fake-quant and the march has no int32 high-precision output');
      const attrs =
        kind === 'linear'
          ? {}
          : {
              stride: l.stride,
              padding: l.padding,
              dilation: l.dilation,
              groups,
              ...(kind === 'conv_transpose' ? { outputPadding: l.outputPadding } : {}),
            };
      const sOut = out ? Math.fround(out.scale[0]!) : 0;
      const module = new FixedConv({
        kind,
        weight: wq,
        attrs: attrs as never,
        bias,
        sumin,
        requant: out ? env.numerics.requantize(sAcc, sOut, out.dtype, ctx.warn) : null,
        outScale: out ? Float32Array.of(sOut) : Float32Array.from(sAcc),
        activation: fused.activation,
        relu6Max: out ? rhu(6 / sOut) : Infinity,
      });
      const outputQparams: QParams = out ?? {
        scale: Float32Array.from(sAcc),
        zeroPoint: 0,
        dtype: 'qint32',
        quantMin: -2147483648,
        quantMax: 2147483647,
        chAxis: 1,
      };
      return { module, outputQparams };
    },
  };
}

/** The conv-family rules: Linear, ConvTranspose, Conv. */
export const CONV_RULES: readonly ConvertRule[] = [
  convRuleFor('Gemm'),
  convRuleFor('ConvTranspose'),
  convRuleFor('Conv'),
];
