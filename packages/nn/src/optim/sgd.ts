import type { Tensor } from '@qtk/tensor';
import { z } from 'zod';
import { gradData, Optimizer, paramData, type ParamGroup, type ParamGroupInput } from './optimizer.js';

export interface SGDOptions {
  lr?: number;
  momentum?: number;
  dampening?: number;
  weightDecay?: number;
  nesterov?: boolean;
  maximize?: boolean;
}

type SGDHyper = Required<SGDOptions>;

const schema: z.ZodType<SGDHyper, z.ZodTypeDef, unknown> = z
  .object({
    lr: z.number().nonnegative().default(1e-3),
    momentum: z.number().nonnegative().default(0),
    dampening: z.number().default(0),
    weightDecay: z.number().nonnegative().default(0),
    nesterov: z.boolean().default(false),
    maximize: z.boolean().default(false),
  })
  .strict()
  .refine((o) => !o.nesterov || (o.momentum > 0 && o.dampening === 0), {
    message: 'nesterov needs momentum > 0 and dampening 0',
    path: ['nesterov'],
  });

/**
 * Stochastic gradient descent with PyTorch's update:
 *   g ← ∇ + wd·p;  b ← g (first step) or μ·b + (1−τ)·g;  g ← g + μ·b (nesterov) or b;  p ← p − lr·g.
 */
export class SGD extends Optimizer<SGDHyper> {
  constructor(params: Iterable<Tensor> | ParamGroupInput<SGDHyper>[], options: SGDOptions = {}) {
    super('SGD', params, options, schema);
  }

  protected updateGroup(group: ParamGroup<SGDHyper>): void {
    const { lr, momentum, dampening, weightDecay: wd, nesterov, maximize } = group;
    const sign = maximize ? -1 : 1;
    for (const p of group.params) {
      if (!p.grad) continue;
      const w = paramData(p);
      const g = gradData(p, 'SGD');
      const n = w.length;
      if (momentum === 0) {
        for (let i = 0; i < n; i++) w[i] = w[i]! - lr * (sign * g[i]! + wd * w[i]!);
        continue;
      }
      const st = this.stateOf(p);
      let buf = st.momentumBuffer as Float32Array | undefined;
      if (!buf) {
        st.momentumBuffer = buf = new Float32Array(n);
        for (let i = 0; i < n; i++) {
          const d = sign * g[i]! + wd * w[i]!;
          buf[i] = d;
          w[i] = w[i]! - lr * (nesterov ? d + momentum * d : d);
        }
        continue;
      }
      const keep = 1 - dampening;
      for (let i = 0; i < n; i++) {
        const d = sign * g[i]! + wd * w[i]!;
        const b = momentum * buf[i]! + keep * d;
        buf[i] = b;
        w[i] = w[i]! - lr * (nesterov ? d + momentum * b : b);
      }
    }
  }
}
