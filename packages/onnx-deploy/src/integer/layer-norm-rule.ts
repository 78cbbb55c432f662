// FixedLayerNorm over rows of the D trailing elements: the mean, x − m, its square, the variance, the
// rsqrt table, the normalized value and the per-feature affine, each the operations of
// FixedLayerNorm.forward in float64 on a [rows, D] view of the input.
import { FixedLayerNorm } from '@qtk/fixed-point';
import { registerModuleExport } from '@qtk/onnx';
import { reduce } from './reduce-emit.js';
import { checkRequantizeExact } from './exact-bounds.js';
import { binary, doubleConst, doubleScalar, requantize, toDouble, toStorage } from './int-emit.js';
import { applyTablePlans } from './table-emit.js';
import type { ObserverDType } from '@qtk/spec';

registerModuleExport(FixedLayerNorm, ({ b, inputs, name, module }) => {
  const c = (module as FixedLayerNorm).config;
  const D = c.features;
  const n = (what: string) => `${name}_${what}`;
  const { mx, mm } = c.sub;
  // every integer is int16 at most (2^15 in magnitude), the input int8 (2^7) where its dtype says so;
  // the accumulators of each requantize:
  const Q = 2 ** 15;
  const X = c.inDtype === 'qint8' ? 2 ** 7 : Q;
  const label = (step: string) => `layer_norm '${name}' ${step}`;
  checkRequantizeExact(label('Σx'), D * X, c.mean);
  checkRequantizeExact(label('x·mx + m·mm'), X * Math.abs(mx) + Q * Math.abs(mm), c.subOut);
  checkRequantizeExact(label('c²'), Q * Q, c.square);
  checkRequantizeExact(label('Σq'), D * Q, c.variance);
  checkRequantizeExact(label('c·r'), Q * Q, c.normalized);
  if (c.affine) {
    let bias = 0;
    for (const v of c.affine.bias) bias = Math.max(bias, Math.abs(v));
    checkRequantizeExact(label('n·w + b'), Q * 128 + bias, c.affine.out);
  } else checkRequantizeExact(label('n'), Q, c.out!);
  const rows = b.node('Reshape', [toDouble(b, inputs[0]!, name), b.intConst([-1, D], n('rows_shape'))], n('rows'))[0]!;
  const m = requantize(b, reduce(b, 'ReduceSum', rows, [1], 1, n('sum_x')), c.mean, -1, 2, n('mean'));
  const centered = binary(
    b,
    'Add',
    binary(b, 'Mul', rows, doubleScalar(b, mx, n('mx')), n('x_mx')),
    binary(b, 'Mul', m, doubleScalar(b, mm, n('mm')), n('m_mm')),
    n('sub_acc'),
  );
  const cq = requantize(b, centered, c.subOut, -1, 2, n('centered'));
  const sq = requantize(b, binary(b, 'Mul', cq, cq, n('c_c')), c.square, -1, 2, n('square'));
  const v = requantize(b, reduce(b, 'ReduceSum', sq, [1], 1, n('sum_sq')), c.variance, -1, 2, n('variance'));
  const r = applyTablePlans(b, v, [c.rsqrt], -1, 2, n('rsqrt'));
  const normalized = requantize(b, binary(b, 'Mul', cq, r, n('c_r')), c.normalized, -1, 2, n('normalized'));
  let y: string;
  if (c.affine) {
    // requantized with one channel per feature (the last axis)
    const weighted = binary(b, 'Mul', normalized, doubleConst(b, c.affine.weight, n('weight')), n('n_w'));
    const acc = binary(b, 'Add', weighted, doubleConst(b, c.affine.bias, n('bias')), n('affine_acc'));
    y = requantize(b, acc, c.affine.out, -1, 2, n('affine'));
  } else {
    y = requantize(b, normalized, c.out!, -1, 2, n('out'));
  }
  const shape = b.node('Shape', [inputs[0]!], n('shape'))[0]!;
  const back = b.node('Reshape', [y, shape], n('reshaped'))[0]!;
  return [toStorage(b, back, c.outDtype as ObserverDType, name)];
});
