// QAT forms of the composite ops (march-semantics.md §1 "Composite ops"): the float op decomposed
// into the steps a march that runs it as a composite computes, each intermediate through its own
// fake-quant (int16 where the march has it), so calibration and QAT observe the scales convert
// needs. Their shape is the contract the composite rules read (SoftmaxQatForm, LayerNormQatForm).
import { type LayerNorm, Module, type Softmax } from '@qtk/nn';
import { add, exp, max, mean, mul, reciprocal, rsqrt, sub, sum, type Tensor } from '@qtk/tensor';

import type { LayerNormQatForm, ObservedStep, SoftmaxQatForm } from '../composite-forms.js';

/** The fake-quant of one intermediate: a module that observes the values it is called on. */
export type QatStep = Module & ObservedStep & { forward(x: Tensor): Tensor };

/** Makes the fake-quant of one intermediate (the module's activation qconfig at the intermediate dtype). */
export type StepFakeQuant<F extends QatStep = QatStep> = () => F;

/** One fake-quant per named step, made in the order given and registered as `<name>_fake_quant`. */
function registerSteps<F extends QatStep, K extends string>(
  owner: Module,
  names: readonly K[],
  step: StepFakeQuant<F>,
): Readonly<Record<K, F>> {
  const steps = Object.fromEntries(names.map((k) => [k, step()])) as Record<K, F>;
  for (const k of names) owner.registerModule(`${k}_fake_quant`, steps[k]);
  return steps;
}

/** Runs one step's fake-quant on `x`. */
function observe(fq: QatStep, x: Tensor): Tensor {
  return fq.call(x);
}

/** softmax = x − max(x) → exp → sum → reciprocal → mul; the output fake-quant is the QatModule's. */
export class SoftmaxQat<F extends QatStep = QatStep> extends Module implements SoftmaxQatForm {
  readonly composite = 'softmax' as const;
  readonly dim: number;
  readonly steps: Readonly<Record<'sub' | 'exp' | 'sum' | 'reciprocal', F>>;

  constructor(float: Softmax, step: StepFakeQuant<F>) {
    super();
    this.dim = float.dim;
    this.steps = registerSteps(this, ['sub', 'exp', 'sum', 'reciprocal'], step);
  }

  forward(x: Tensor): Tensor {
    const s = this.steps;
    // softmax is invariant to the shift: no gradient through the max
    const d = observe(s.sub, sub(x, max(x, this.dim, true).detach()));
    const e = observe(s.exp, exp(d));
    const r = observe(s.reciprocal, reciprocal(observe(s.sum, sum(e, this.dim, true))));
    return mul(e, r);
  }

  override extraRepr(): string {
    return `dim=${this.dim}, composite`;
  }
}

/** layernorm = mean → sub → square → mean → rsqrt(var + eps) → mul → × weight + bias; parameters are the float module's. */
export class LayerNormQat<F extends QatStep = QatStep> extends Module implements LayerNormQatForm {
  readonly composite = 'layer_norm' as const;
  readonly float: LayerNorm;
  readonly steps: Readonly<Record<'mean' | 'sub' | 'square' | 'variance' | 'rsqrt' | 'normalized', F>>;

  constructor(float: LayerNorm, step: StepFakeQuant<F>) {
    super();
    this.float = float;
    this.registerModule('float', float);
    this.steps = registerSteps(this, ['mean', 'sub', 'square', 'variance', 'rsqrt', 'normalized'], step);
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
    const m = observe(s.mean, mean(x, axes, true));
    const c = observe(s.sub, sub(x, m));
    const v = observe(s.variance, mean(observe(s.square, mul(c, c)), axes, true));
    const r = observe(s.rsqrt, rsqrt(add(v, this.float.eps)));
    let y = observe(s.normalized, mul(c, r));
    if (this.float.weight) y = mul(y, this.float.weight);
    if (this.float.bias) y = add(y, this.float.bias);
    return y;
  }

  override extraRepr(): string {
    return `[${this.float.normalizedShape}], eps=${this.float.eps}, composite`;
  }
}
