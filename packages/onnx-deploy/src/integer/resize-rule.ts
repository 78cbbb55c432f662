// FixedResize (bilinear): the four taps of each output pixel gathered along H and W, then
// acc = wy0·(wx0·x00 + wx1·x01) + wy1·(wx0·x10 + wx1·x11) with QTK's integer weights (8 fractional
// bits each), in float64: |acc| <= 2^15·2^16 = 2^31, exact. Then shrR(acc, 16) at the input's scale,
// or the requantize plan of its own output scale.
import {
  FixedResize,
  type QTensor,
  type QTensorDType,
  RESIZE_WEIGHT_BITS,
  type RequantizePlan,
  bilinearTaps,
  resizePlan,
} from '@qtk/fixed-point';
import type { InterpolateOptions } from '@qtk/tensor';
import { OnnxExportError, registerModuleExport, DataType } from '@qtk/onnx';
import { checkRequantizeExact } from './exact-bounds.js';
import {
  binary,
  doubleConst,
  doubleScalar,
  floor,
  intConstOf,
  requantize,
  saturate,
  toDouble,
  toStorage,
} from './int-emit.js';

registerModuleExport(FixedResize, ({ b, inputs, name, module, args }) => {
  const m = module as FixedResize;
  const x = args[0] as QTensor;
  const opts = (args[1] as InterpolateOptions | undefined) ?? m.options;
  if (!opts) throw new OnnxExportError(`exportOnnx: FixedResize '${name}' has no resize options (size or scaleFactor)`);
  if ((opts.mode ?? 'nearest') !== 'bilinear')
    throw new OnnxExportError(
      `exportOnnx: FixedResize '${name}' computes only 'bilinear', got '${opts.mode ?? 'nearest'}'`,
    );
  const [, , H, W] = x.shape as [number, number, number, number];
  const { size, scales } = resizePlan(H, W, opts);
  const [OH, OW] = size;
  const align = opts.alignCorners ?? false;
  const th = bilinearTaps(H, OH, scales[0], align, m.rounding);
  const tw = bilinearTaps(W, OW, scales[1], align, m.rounding);
  const n = (what: string) => `${name}_${what}`;
  const gather = (data: string, index: Int32Array, axis: number, what: string): string =>
    b.node('Gather', [data, intConstOf(b, index, DataType.INT64, n(`${what}_index`))], n(what), { axis })[0]!;
  const row0 = gather(inputs[0]!, th.i0, 2, 'row0');
  const row1 = gather(inputs[0]!, th.i1, 2, 'row1');
  const tap = (row: string, index: Int32Array, what: string) => toDouble(b, gather(row, index, 3, what), n(what));
  const x00 = tap(row0, tw.i0, 'x00');
  const x01 = tap(row0, tw.i1, 'x01');
  const x10 = tap(row1, tw.i0, 'x10');
  const x11 = tap(row1, tw.i1, 'x11');
  const wx0 = doubleConst(b, tw.w0, n('wx0'), [OW]);
  const wx1 = doubleConst(b, tw.w1, n('wx1'), [OW]);
  const wy0 = doubleConst(b, th.w0, n('wy0'), [OH, 1]);
  const wy1 = doubleConst(b, th.w1, n('wy1'), [OH, 1]);
  const line = (a: string, c: string, what: string) =>
    binary(
      b,
      'Add',
      binary(b, 'Mul', wx0, a, n(`${what}_w0`)),
      binary(b, 'Mul', wx1, c, n(`${what}_w1`)),
      n(`${what}_sum`),
    );
  const acc = binary(
    b,
    'Add',
    binary(b, 'Mul', wy0, line(x00, x01, 'top'), n('top_w')),
    binary(b, 'Mul', wy1, line(x10, x11, 'bottom'), n('bottom_w')),
    n('acc'),
  );
  const plan = (m as unknown as { plan: RequantizePlan | null }).plan;
  const dtype = (m.outDtype ?? x.dtype) as QTensorDType;
  let y: string;
  if (plan) {
    checkRequantizeExact(`resize '${name}'`, 2 ** 31, plan);
    y = requantize(b, acc, plan, -1, 4, n('requant'));
  } else {
    const bits = 2 * RESIZE_WEIGHT_BITS;
    const half = binary(b, 'Add', acc, doubleScalar(b, 2 ** (bits - 1), n('half')), n('acc_half'));
    y = saturate(
      b,
      floor(b, binary(b, 'Mul', half, doubleScalar(b, 2 ** -bits, n('inv')), n('scaled')), n('shr')),
      dtype,
      n('sat'),
    );
  }
  return [toStorage(b, y, dtype, name)];
});
