// Inputs that reach every integer of a quantized input: the float values q·s for each q of the
// dtype's range, and values beyond it (saturation) and halfway between steps (rounding).
import type { Quantize } from '@qtk/fixed-point';
import type { GraphModule } from '@qtk/ir';
import { Tensor } from '@qtk/tensor';

/**
 * A [rows, cols] float input whose quantization by `quant` (`scale`, `dtype`) gives every integer of
 * the dtype's range (in order, from row 0), then ±1e9 and ±2.5 / ±0.5 steps, then repeats the grid.
 */
export function integerGridInput(quant: Quantize, cols: number): Tensor {
  const lo = quant.dtype === 'qint16' ? -32768 : -128;
  const hi = quant.dtype === 'qint16' ? 32767 : 127;
  const values: number[] = [];
  for (let q = lo; q <= hi; q++) values.push(q * quant.scale);
  const s = quant.scale;
  values.push(1e9, -1e9, (hi + 3) * s, (lo - 3) * s, 2.5 * s, -2.5 * s, 0.5 * s, -0.5 * s, 127.5 * s, -128.5 * s);
  const rows = Math.ceil(values.length / cols);
  const data = new Float32Array(rows * cols);
  for (let i = 0; i < data.length; i++) data[i] = values[i % values.length]!;
  return new Tensor({ data, shape: [rows, cols], dtype: 'float32' });
}

/** The Quantize module that converts the model's first input. */
export function inputQuantize(fixed: GraphModule, path = 'quant'): Quantize {
  return fixed.getSubmodule(path) as Quantize;
}
