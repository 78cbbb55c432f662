// QAT forms of the bayes composites (march-semantics.md §1 "Composite ops on bayes"): the float op
// decomposed into the steps the march computes, each intermediate through its own fake-quant (int16
// where the march has it), so calibration and QAT observe the scales convert needs. Their shape is
// the contract @qtk/fixed-point's composite rules read (SoftmaxQatForm, LayerNormQatForm).
import type { FakeQuantize } from '@qtk/fake-quant';
import type { LayerNormQatForm, SoftmaxQatForm } from '@qtk/fixed-point';
import { LayerNorm, Module, Softmax } from '@qtk/nn';
import { add, exp, max, mean, mul, reciprocal, rsqrt, sub, sum, type Tensor } from '@qtk/tensor';

/** Makes the fake-quant of one intermediate (the module's activation qconfig at the intermediate dtype). */
export type StepFakeQuant = () => FakeQuantize;

/** softmax = x − max(x) → exp → sum → reciprocal → mul; the output fake-quant is the QatModule's. */
export class SoftmaxQat extends Module implements SoftmaxQatForm {
  readonly composite = 'softmax' as const;
  readonly dim: number;
  readonly steps: {
    readonly sub: FakeQuantize;
    readonly exp: FakeQuantize;
    readonly sum: FakeQuantize;
    readonly reciprocal: FakeQuantize;
  };

  constructor(float: Softmax, step: StepFakeQuant) {
    super();
    this.dim = float.dim;
    this.steps = { sub: step(), exp: step(), sum: step(), reciprocal: step() };
    for (const [k, m] of Object.entries(this.steps)) this.registerModule(`${k}_fake_quant`, m);
  }

  forward(x: Tensor): Tensor {
    const s = this.steps;
    // softmax is invariant to the shift: no gradient through the max
    const d = s.sub.call(sub(x, max(x, this.dim, true).detach()));
    const e = s.exp.call(exp(d));
    const r = s.reciprocal.call(reciprocal(s.sum.call(sum(e, this.dim, true))));
    return mul(e, r);
  }

  override extraRepr(): string {
    return `dim=${this.dim}, composite`;
  }
}

/** layernorm = mean → sub → square → mean → rsqrt(var + eps) → mul → × weight + bias; parameters are the float module's. */
export class LayerNormQat extends Module implements LayerNormQatForm {
  readonly composite = 'layer_norm' as const;
  readonly float: LayerNorm;
  readonly steps: {
    readonly mean: FakeQuantize;
    readonly sub: FakeQuantize;
    readonly square: FakeQuantize;
    readonly variance: FakeQuantize;
    readonly rsqrt: FakeQuantize;
    readonly normalized: FakeQuantize;
  };

  constructor(float: LayerNorm, step: StepFakeQuant) {
    super();
    this.float = float;
    this.registerModule('float', float);
    this.steps = { mean: step(), sub: step(), square: step(), variance: step(), rsqrt: step(), normalized: step() };
    for (const [k, m] of Object.entries(this.steps)) this.registerModule(`${k}_fake_quant`, m);
  }

  get normalizedShape(): readonly number[] {
    return this.float.normalizedShape;
  }
  get eps(): number {
    return this.float.eps;
  }
  get weight(): Tensor | null {
    return this.float.weight;
  }
  get bias(): Tensor | null {
    return this.float.bias;
  }

  forward(x: Tensor): Tensor {
    const s = this.steps;
    const k = this.float.normalizedShape.length;
    const axes = Array.from({ length: k }, (_, i) => x.shape.length - k + i);
    const m = s.mean.call(mean(x, axes, true));
    const c = s.sub.call(sub(x, m));
    const v = s.variance.call(mean(s.square.call(mul(c, c)), axes, true));
    const r = s.rsqrt.call(rsqrt(add(v, this.float.eps)));
    let y = s.normalized.call(mul(c, r));
    if (this.float.weight) y = mul(y, this.float.weight);
    if (this.float.bias) y = add(y, this.float.bias);
    return y;
  }

  override extraRepr(): string {
    return `[${this.float.normalizedShape}], eps=${this.float.eps}, composite`;
  }
}

/** The composite QAT form of a float module, or null when it has none. */
export function compositeQatForm(module: Module, step: StepFakeQuant): Module | null {
  if (module instanceof Softmax) return new SoftmaxQat(module, step);
  if (module instanceof LayerNorm) return new LayerNormQat(module, step);
  return null;
}

/** The capability-table op of a module with a composite form. */
export function compositeOpOf(module: Module): string | null {
  return module instanceof Softmax ? 'Softmax' : module instanceof LayerNorm ? 'LayerNormalization' : null;
}
