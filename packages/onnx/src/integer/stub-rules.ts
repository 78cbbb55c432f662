// The boundaries of the quantized region: Quantize (float in, integers out) and Dequantize.
import { Dequantize, Quantize } from '@qtk/fixed-point';
import { registerModuleExport } from '../export-rules.js';
import { DataType } from '../onnx-schema.js';
import { binary, cast, channelConst, doubleScalar, floor, saturate, toDouble, toStorage } from './int-emit.js';
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
 * `q · scale` as QTK computes it: the float64 product (exact for int8 and int16, one rounding for
 * int32), then one rounding to float32.
 */
registerModuleExport(Dequantize, ({ b, inputs, name, args }) => {
  const x = args[0] as QTensor;
  const rank = x.shape.length;
  const scale = channelConst(b, Array.from(x.scale), x.axis, rank, `${name}_scale`);
  const product = binary(b, 'Mul', toDouble(b, inputs[0]!, name), scale, `${name}_mul`);
  return [cast(b, product, DataType.FLOAT, name)];
});
