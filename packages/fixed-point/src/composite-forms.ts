// What conversion reads from the QAT form of a composite op (march-semantics.md §1, composite ops):
// the decomposed float computation with a fake-quant after every intermediate. The QAT classes
// (composites/qat-forms.ts) implement it; a third party's QAT form of softmax or layernorm can too.
import type { QParams } from '@qtk/spec';
import type { Tensor } from '@qtk/tensor';

/** A fake-quant as conversion sees it: the qparams it observed. */
export interface ObservedStep {
  calculateQparams(): QParams;
}

/** softmax = x − max(x) → exp → sum → reciprocal → mul (the output fake-quant is the QAT wrapper's). */
export interface SoftmaxQatForm {
  readonly composite: 'softmax';
  readonly dim: number;
  readonly steps: {
    readonly sub: ObservedStep;
    readonly exp: ObservedStep;
    readonly sum: ObservedStep;
    readonly reciprocal: ObservedStep;
  };
}

/** layernorm = mean → sub → square → mean → rsqrt(var + eps) → mul (→ × weight + bias). */
export interface LayerNormQatForm {
  readonly composite: 'layer_norm';
  readonly normalizedShape: readonly number[];
  readonly eps: number;
  readonly weight: Tensor | null;
  readonly bias: Tensor | null;
  readonly steps: {
    readonly mean: ObservedStep;
    readonly sub: ObservedStep;
    readonly square: ObservedStep;
    readonly variance: ObservedStep;
    readonly rsqrt: ObservedStep;
    readonly normalized: ObservedStep;
  };
}

/** div = x · reciprocal(y). */
export interface DivQatForm {
  readonly composite: 'div';
  readonly steps: { readonly reciprocal: ObservedStep };
}

export type CompositeQatForm = SoftmaxQatForm | LayerNormQatForm | DivQatForm;

/** The composite QAT form a module implements, or null. */
export function compositeFormOf(m: unknown): CompositeQatForm | null {
  const c = (m as { composite?: unknown } | null)?.composite;
  return c === 'softmax' || c === 'layer_norm' || c === 'div' ? (m as CompositeQatForm) : null;
}
