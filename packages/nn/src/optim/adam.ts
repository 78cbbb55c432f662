import type { Tensor } from '@qtk/tensor';
import { z } from 'zod';
import { gradData, Optimizer, paramData, type ParamGroup, type ParamGroupInput } from './optimizer.js';

export interface AdamOptions {
  lr?: number;
  betas?: [number, number];
  eps?: number;
  weightDecay?: number;
  amsgrad?: boolean;
  maximize?: boolean;
}

type AdamHyper = Required<AdamOptions>;

function schemaWith(defaultWeightDecay: number): z.ZodType<AdamHyper, z.ZodTypeDef, unknown> {
  const beta = z.number().min(0).lt(1);
  return z
    .object({
      lr: z.number().nonnegative().default(1e-3),
      betas: z.tuple([beta, beta]).default([0.9, 0.999]),
      eps: z.number().nonnegative().default(1e-8),
      weightDecay: z.number().nonnegative().default(defaultWeightDecay),
      amsgrad: z.boolean().default(false),
      maximize: z.boolean().default(false),
    })
    .strict();
}

/**
 * One Adam/AdamW step over a group, PyTorch's equations (t counted per parameter):
 *   AdamW: p ← p·(1 − lr·wd);  Adam: g ← ∇ + wd·p
 *   m ← β1·m + (1−β1)·g;  v ← β2·v + (1−β2)·g²  (amsgrad: v̂ ← max(v̂, v))
 *   p ← p − (lr / (1−β1^t)) · m / (√v / √(1−β2^t) + ε)
 */
function adamStep(opt: AdamBase, group: ParamGroup<AdamHyper>, decoupled: boolean, who: string): void {
  const { lr, betas, eps, weightDecay: wd, amsgrad, maximize } = group;
  const [b1, b2] = betas;
  const sign = maximize ? -1 : 1;
  const coupledWd = decoupled ? 0 : wd;
  const decay = decoupled ? 1 - lr * wd : 1;
  for (const p of group.params) {
    if (!p.grad) continue;
    const w = paramData(p);
    const g = gradData(p, who);
    const n = w.length;
    const st = opt.paramState(p);
    if (st.step === undefined) {
      st.step = 0;
      st.expAvg = new Float32Array(n);
      st.expAvgSq = new Float32Array(n);
      if (amsgrad) st.maxExpAvgSq = new Float32Array(n);
    }
    const t = (st.step as number) + 1;
    st.step = t;
    const m = st.expAvg as Float32Array;
    const v = st.expAvgSq as Float32Array;
    if (amsgrad) st.maxExpAvgSq ??= new Float32Array(n);
    const vmax = amsgrad ? (st.maxExpAvgSq as Float32Array) : v;
    const stepSize = lr / (1 - b1 ** t);
    const bc2Sqrt = Math.sqrt(1 - b2 ** t);
    for (let i = 0; i < n; i++) {
      let wi = w[i]!;
      if (decay !== 1) wi *= decay;
      const d = sign * g[i]! + coupledWd * wi;
      // mi and vi keep the float64 values; the Float32Array slots store them rounded
      const mi = b1 * m[i]! + (1 - b1) * d;
      m[i] = mi;
      const vi = b2 * v[i]! + (1 - b2) * d * d;
      v[i] = vi;
      let vh = vi;
      if (amsgrad) vh = vmax[i] = Math.max(vmax[i]!, vi);
      w[i] = wi - (stepSize * mi) / (Math.sqrt(vh) / bc2Sqrt + eps);
    }
  }
}

abstract class AdamBase extends Optimizer<AdamHyper> {
  paramState(p: Tensor) {
    return this.stateOf(p);
  }
}

/** Adam (weight decay added to the gradient, L2 style). */
export class Adam extends AdamBase {
  constructor(params: Iterable<Tensor> | ParamGroupInput<AdamHyper>[], options: AdamOptions = {}) {
    super('Adam', params, options, schemaWith(0));
  }

  protected updateGroup(group: ParamGroup<AdamHyper>): void {
    adamStep(this, group, false, 'Adam');
  }
}

/** AdamW: Adam with decoupled weight decay (default 0.01). */
export class AdamW extends AdamBase {
  constructor(params: Iterable<Tensor> | ParamGroupInput<AdamHyper>[], options: AdamOptions = {}) {
    super('AdamW', params, options, schemaWith(1e-2));
  }

  protected updateGroup(group: ParamGroup<AdamHyper>): void {
    adamStep(this, group, true, 'AdamW');
  }
}
