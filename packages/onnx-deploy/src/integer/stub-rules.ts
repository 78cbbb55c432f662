// The boundaries of the quantized region: Quantize (float in, integers out) and Dequantize.
import { Dequantize, Quantize } from '@qtk/fixed-point';
import { registerModuleExport, DataType } from '@qtk/onnx';
import {
  binary,
  cast,
  channelConst,
  doubleScalar,
  floor,
  intConstOf,
  STORAGE_ELEM,
  saturate,
  toDouble,
  toStorage,
} from './int-emit.js';
import type { QTensor } from '@qtk/fixed-point';

/**
 * `q = sat(R(x / s))`: x to float64 (exact), one correctly rounded float64 division as in QTK, then
 * rhu as floor(v + 0.5) (the same two float64 operations) or ONNX Round (half to even, exact on float64).
 */
registerModuleExport(Quantize, ({ b, inputs, name, module }) => {
  const q = module as Quantize;
  const v = binary(b, 'Div', toDouble(b, inputs[0]!, name), doubleScalar(b, q.scale, `${name}_scale`), `${name}_div`);
  const r =
    q.rounding === 'half_even'
      ? b.node('Round', [v], `${name}_round`)[0]!
      : floor(b, binary(b, 'Add', v, doubleScalar(b, 0.5, `${name}_half`), `${name}_add`), `${name}_floor`);
  return [toStorage(b, saturate(b, r, q.dtype, `${name}_sat`), q.dtype, name)];
});

/**
 * `q · scale` as QTK computes it: the float64 product, then one rounding to float32. For int8 and
 * int16 the float64 product is exact, so this is one correctly rounded float32 multiply, which is what
 * DequantizeLinear computes: the standard op is written for int8 (int16 from opset 21, per channel
 * from opset 13). int32 (a high-precision output) can have 32 significant bits, which DequantizeLinear
 * would round to float32 before multiplying, so it keeps the float64 form.
 */
registerModuleExport(Dequantize, ({ b, inputs, name, args }) => {
  const x = args[0] as QTensor;
  const rank = x.shape.length;
  const standard = (x.dtype === 'qint8' || (x.dtype === 'qint16' && b.opset >= 21)) && (x.axis < 0 || b.opset >= 13);
  if (standard) {
    const zeroPoint = intConstOf(
      b,
      new Array<number>(x.scale.length).fill(0),
      STORAGE_ELEM[x.dtype],
      `${name}_zero_point`,
      x.axis < 0 ? [] : [x.scale.length],
    );
    const scale = b.floatConst(Array.from(x.scale), `${name}_scale`, x.axis < 0 ? [] : [x.scale.length]);
    return b.node('DequantizeLinear', [inputs[0]!, scale, zeroPoint], name, { axis: x.axis < 0 ? undefined : x.axis });
  }
  const scale = channelConst(b, Array.from(x.scale), x.axis, rank, `${name}_scale`);
  const product = binary(b, 'Mul', toDouble(b, inputs[0]!, name), scale, `${name}_mul`);
  return [cast(b, product, DataType.FLOAT, name)];
});
