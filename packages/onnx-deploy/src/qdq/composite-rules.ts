// The composite QAT forms (softmax, layer norm decomposed into the steps a march runs, each step's
// value through its own fake-quant) as the same ONNX steps with QuantizeLinear → DequantizeLinear
// after each. Their output fake-quant is the enclosing QAT module's.
import type { FakeQuantize } from '@qtk/fake-quant';
import type { LayerNormQat, SoftmaxQat } from '@qtk/fixed-point';
import { type OnnxBuilder, type ReduceOp, reduceNode, type ModuleExportStep } from '@qtk/onnx';
import { isFakeQuantActive, quantizeDequantize } from './qdq-emit.js';
import { rankOf } from './weighted-layer.js';

function reduce(b: OnnxBuilder, op: ReduceOp, x: string, axes: number[], name: string): string {
  return reduceNode(b, op, x, axes, true, name)[0]!;
}

/** Writes one step's fake-quant (QDQ), or nothing while it only observes. */
function stepQdq(s: ModuleExportStep, fq: unknown, x: string, step: string): string {
  const f = fq as FakeQuantize;
  if (!isFakeQuantActive(f)) return x;
  return quantizeDequantize(s.b, x, f, `${s.name}_${step}`, `${s.name}_${step}`, `${s.path}.${step}_fake_quant`);
}

/** softmax = x − max(x) → exp → sum → reciprocal → mul. */
export function exportSoftmaxQat(s: ModuleExportStep): string[] {
  const m = s.module as SoftmaxQat;
  const { b, name } = s;
  const x = s.inputs[0]!;
  const axis = m.dim < 0 ? m.dim + rankOf(s.args[0]) : m.dim;
  const max = reduce(b, 'ReduceMax', x, [axis], `${name}_max`);
  const d = stepQdq(s, m.steps.sub, b.node('Sub', [x, max], `${name}_sub_float`)[0]!, 'sub');
  const e = stepQdq(s, m.steps.exp, b.node('Exp', [d], `${name}_exp_float`)[0]!, 'exp');
  const sum = stepQdq(s, m.steps.sum, reduce(b, 'ReduceSum', e, [axis], `${name}_sum_float`), 'sum');
  const r = stepQdq(s, m.steps.reciprocal, b.node('Reciprocal', [sum], `${name}_reciprocal_float`)[0]!, 'reciprocal');
  return b.node('Mul', [e, r], name);
}

/** layer norm = mean → sub → square → mean → 1/√(var + ε) → mul, then × weight + bias. */
export function exportLayerNormQat(s: ModuleExportStep): string[] {
  const m = s.module as LayerNormQat;
  const { b, name } = s;
  const x = s.inputs[0]!;
  const rank = rankOf(s.args[0]);
  const k = m.normalizedShape.length;
  const axes = Array.from({ length: k }, (_, i) => rank - k + i);
  const mean = stepQdq(s, m.steps.mean, reduce(b, 'ReduceMean', x, axes, `${name}_mean_float`), 'mean');
  const c = stepQdq(s, m.steps.sub, b.node('Sub', [x, mean], `${name}_sub_float`)[0]!, 'sub');
  const sq = stepQdq(s, m.steps.square, b.node('Mul', [c, c], `${name}_square_float`)[0]!, 'square');
  const v = stepQdq(s, m.steps.variance, reduce(b, 'ReduceMean', sq, axes, `${name}_variance_float`), 'variance');
  const eps = b.floatConst([m.eps], `${name}_eps`, []);
  const std = b.node('Sqrt', b.node('Add', [v, eps], `${name}_add_eps`), `${name}_sqrt`)[0]!;
  const r = stepQdq(s, m.steps.rsqrt, b.node('Reciprocal', [std], `${name}_rsqrt_float`)[0]!, 'rsqrt');
  const tail = (m.weight ? 1 : 0) + (m.bias ? 1 : 0);
  let y = stepQdq(s, m.steps.normalized, b.node('Mul', [c, r], `${name}_normalized_float`)[0]!, 'normalized');
  if (m.weight) {
    const w = b.tensor(m.weight, `${s.path}.float.weight`);
    y = b.node('Mul', [y, w], tail === 1 ? name : `${name}_weight`)[0]!;
  }
  if (m.bias) y = b.node('Add', [y, b.tensor(m.bias, `${s.path}.float.bias`)], name)[0]!;
  return tail ? [y] : b.node('Identity', [y], name);
}
