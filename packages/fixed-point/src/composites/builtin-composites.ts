// The composite ops QTK ships: softmax and layernorm as QAT forms converted by their composite
// rules, div as a graph rewrite into ops that other rules convert. Registered when @qtk/fixed-point loads.
import { LayerNorm, type Module, Softmax } from '@qtk/nn';
import { layerNormRule, softmaxRule } from '../convert/composite-rules.js';
import { compositeOps, type CompositeOp } from './composite-ops.js';
import { decomposeDiv } from './div-rewrite.js';
import { LayerNormQat, SoftmaxQat, type StepFakeQuant } from './qat-forms.js';

export const SOFTMAX_COMPOSITE: CompositeOp = Object.freeze({
  op: 'Softmax',
  qatForm: (m: Module, step: StepFakeQuant) => (m instanceof Softmax ? new SoftmaxQat(m, step) : null),
  rule: softmaxRule,
});

export const LAYER_NORM_COMPOSITE: CompositeOp = Object.freeze({
  op: 'LayerNormalization',
  qatForm: (m: Module, step: StepFakeQuant) => (m instanceof LayerNorm ? new LayerNormQat(m, step) : null),
  rule: layerNormRule,
});

export const DIV_COMPOSITE: CompositeOp = Object.freeze({ op: 'Div', prepare: decomposeDiv });

/** Registers the built-in composite ops (idempotent). */
export function registerBuiltinComposites(): void {
  for (const c of [SOFTMAX_COMPOSITE, LAYER_NORM_COMPOSITE, DIV_COMPOSITE]) compositeOps.register(c);
}

registerBuiltinComposites();
