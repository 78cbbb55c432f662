// Conversion of the composite ops softmax and layernorm (march-semantics.md §1), registered in
// compositeOps (composites/builtin-composites.ts), from the QAT forms prepare gives them
// (composite-forms.ts), whose fake-quants observed every intermediate. A plain Softmax / LayerNorm (prepared without such a march) is rejected with
// what to do; a march whose table lacks the op rejects it through the table.
import { LayerNorm, Softmax } from '@qtk/nn';
import { UnsupportedOpError, type ConvertNodeContext, type QParams } from '@qtk/spec';
import { compositeFormOf, type LayerNormQatForm, type SoftmaxQatForm } from '../composite-forms.js';
import { roundReal, sat } from '../integer-math.js';
import { FixedLayerNorm, subPlanOf } from '../modules/fixed-layer-norm.js';
import { FixedSoftmax } from '../modules/fixed-softmax.js';
import * as nl from '../nonlinear-functions.js';
import { isCall, isModule, opNameOf, quantizedArgs, type ConvertRule, type MarchEnv } from './march-converter.js';
import { planTunedTable, type ScaleAndDtype } from './table-options.js';

type Env = MarchEnv & { readonly op: string | null };

function failer(ctx: ConvertNodeContext, env: Env) {
  return (reason: string) =>
    new UnsupportedOpError({ op: `${opNameOf(ctx)} (${env.op})`, node: ctx.node.name, march: env.march, reason });
}

function common(ctx: ConvertNodeContext, env: Env, kind: 'softmax' | 'layer_norm'): { inQ: QParams; out: QParams } {
  const fail = failer(ctx, env);
  const cap = env.table.ops.find((o) => o.op === env.op)!;
  if (cap.impl !== 'composite')
    throw fail(`this march runs ${env.op} as '${cap.impl ?? 'unspecified'}', not as the composite this rule builds`);
  if (ctx.node.op !== 'call_module') {
    throw fail(
      `the functional form has no composite QAT form to observe its intermediates; use the ${kind === 'softmax' ? 'nn.Softmax' : 'nn.LayerNorm'} module`,
    );
  }
  if (!compositeFormOf(ctx.module) || compositeFormOf(ctx.module)!.composite !== kind) {
    throw fail(
      `it was prepared without its composite QAT form (the fake-quants of its int16 intermediates); call setMarch('${env.march}') before prepareQatFx so prepare decomposes it`,
    );
  }
  const input = quantizedArgs(ctx)[0];
  if (!input || input.node !== ctx.node.args[0]) throw fail('its input is not quantized');
  if (input.qparams.scale.length !== 1) throw fail('its input has a per-channel scale');
  const out = ctx.outputQparams;
  if (!out) throw fail('it has no output fake-quant');
  return { inQ: input.qparams, out };
}

const s0 = (q: QParams): number => Math.fround(q.scale[0]!);

/** A float32 scale as a float64-exact product, as requantize expects. */
function observed(step: { calculateQparams(): QParams }): ScaleAndDtype {
  const q = step.calculateQparams();
  return { s: s0(q), dt: q.dtype };
}

export const softmaxRule: ConvertRule = {
  name: 'composite:softmax',
  ops: ['Softmax'],
  tables: ['exp', 'reciprocal'],
  match: (ctx) =>
    compositeFormOf(ctx.module)?.composite === 'softmax' || isModule(ctx, Softmax) || isCall(ctx, 'softmax'),
  build(ctx, env) {
    const { inQ, out } = common(ctx, env, 'softmax');
    const form = ctx.module as unknown as SoftmaxQatForm;
    const d = observed(form.steps.sub);
    const e = observed(form.steps.exp);
    const S = observed(form.steps.sum);
    const r = observed(form.steps.reciprocal);
    const rq = env.numerics.requantize;
    const module = new FixedSoftmax({
      dim: form.dim,
      inScale: s0(inQ),
      inDtype: inQ.dtype,
      sub: rq(s0(inQ), d.s, d.dt, ctx.warn),
      exp: planTunedTable(ctx, 'exp', nl.exp, d, e, 'even'),
      sum: rq(e.s, S.s, S.dt, ctx.warn),
      reciprocal: planTunedTable(ctx, 'reciprocal', nl.reciprocal, S, r, 'curvature'),
      mul: rq(e.s * r.s, s0(out), out.dtype, ctx.warn),
      outScale: s0(out),
      outDtype: out.dtype,
    });
    return { module, outputQparams: out };
  },
};

/** rsqrt(x + eps), the function the layernorm table holds; +∞ where x + eps ≤ 0. */
export function rsqrtPlusEps(eps: number): nl.NonlinearFunction {
  return Object.freeze({
    name: `rsqrt(x+${eps})`,
    f: (x: number) => (x + eps <= 0 ? Infinity : 1 / Math.sqrt(x + eps)),
    odd: false,
  });
}

export const layerNormRule: ConvertRule = {
  name: 'composite:layer_norm',
  ops: ['LayerNormalization'],
  tables: ['rsqrt'],
  match: (ctx) =>
    compositeFormOf(ctx.module)?.composite === 'layer_norm' || isModule(ctx, LayerNorm) || isCall(ctx, 'layerNorm'),
  build(ctx, env) {
    const { inQ, out } = common(ctx, env, 'layer_norm');
    const form = ctx.module as unknown as LayerNormQatForm;
    const D = form.normalizedShape.reduce((a, b) => a * b, 1);
    const st = form.steps;
    const m = observed(st.mean);
    const c = observed(st.sub);
    const q = observed(st.square);
    const v = observed(st.variance);
    const r = observed(st.rsqrt);
    const n = observed(st.normalized);
    const rq = env.numerics.requantize;
    const sx = s0(inQ);
    const sub = subPlanOf(env.numerics.planAdd({ scale: sx, dtype: inQ.dtype }, { scale: m.s, dtype: m.dt }, true));
    if (!sub) {
      throw failer(
        ctx,
        env,
      )(
        "this march's sub plan needs a right shift, a saturating negation or an int32 accumulator, which the layernorm's x − m step does not have",
      );
    }
    const sOut = s0(out);
    let affine: ConstructorParameters<typeof FixedLayerNorm>[0]['affine'] = null;
    if (form.weight) {
      // [choice] weight int8 per feature (s_w[i] = |w_i|/127, so w_q = ±127: only the float32 scale
      // rounds), bias int32 at s_n·s_w[i], one requantize channel per feature
      const w = form.weight.values();
      const b = form.bias?.values();
      let wmax = 0;
      for (let i = 0; i < D; i++) wmax = Math.max(wmax, Math.abs(w[i]!));
      const weight = new Int8Array(D);
      const bias = new Int32Array(D);
      const sAcc = new Float64Array(D);
      for (let i = 0; i < D; i++) {
        const sw = Math.fround((Math.abs(w[i]!) || wmax || 1) / 127);
        weight[i] = sat(roundReal(w[i]! / sw, ctx.rounding), 'qint8');
        sAcc[i] = n.s * sw;
        bias[i] = b ? sat(roundReal(b[i]! / sAcc[i]!, ctx.rounding), 'qint32') : 0;
      }
      affine = { weight, bias, out: rq(sAcc, sOut, out.dtype, ctx.warn) };
    }
    const module = new FixedLayerNorm({
      features: D,
      inScale: sx,
      inDtype: inQ.dtype,
      mean: rq(sx / D, m.s, m.dt, ctx.warn),
      sub,
      subOut: rq(sub.sAcc, c.s, c.dt, ctx.warn),
      square: rq(c.s * c.s, q.s, q.dt, ctx.warn),
      variance: rq(q.s / D, v.s, v.dt, ctx.warn),
      rsqrt: planTunedTable(ctx, 'rsqrt', rsqrtPlusEps(form.eps), v, r, 'curvature'),
      normalized: rq(c.s * r.s, n.s, n.dt, ctx.warn),
      affine,
      out: affine ? null : rq(n.s, sOut, out.dtype, ctx.warn),
      outScale: sOut,
      outDtype: out.dtype,
    });
    return { module, outputQparams: out };
  },
};

/** The composite rules (softmax, layernorm). */
export const COMPOSITE_RULES: readonly ConvertRule[] = [softmaxRule, layerNormRule];
