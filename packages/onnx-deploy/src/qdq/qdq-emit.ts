// QuantizeLinear / DequantizeLinear for QTK's fake-quants: symmetric (zero point 0), int8 or int16,
// one scale per tensor or one per channel (the `axis` attribute). The zero point's element type
// (int8 / int16) selects the integer type of the quantized tensor.
import type { FakeQuantize } from '@qtk/fake-quant';
import { quantRange } from '@qtk/spec';
import { Tensor, roundingFunction } from '@qtk/tensor';
import { OnnxExportError, type OnnxBuilder, DataType } from '@qtk/onnx';
import { intConstOf } from '../integer/int-emit.js';

/** The opset from which QuantizeLinear / DequantizeLinear take int16 (and uint16). */
export const INT16_QDQ_OPSET = 21;
/** The opset from which QuantizeLinear / DequantizeLinear take a per-channel `axis`. */
export const PER_CHANNEL_QDQ_OPSET = 13;

const ELEM: Readonly<Record<string, number>> = { qint8: DataType.INT8, qint16: DataType.INT16 };

/** The ONNX integer type of a fake-quant's dtype (int8 / int16); QuantizeLinear has no int32. */
function elemOf(fq: FakeQuantize): number {
  const e = ELEM[fq.dtype];
  if (e === undefined)
    throw new OnnxExportError(`exportOnnx: a ${fq.dtype} fake-quant has no QuantizeLinear form (int8 and int16 do)`);
  return e;
}

/** Whether a fake-quant changes values as the model runs: in the CALIBRATION state it only observes. */
export function isFakeQuantActive(fq: FakeQuantize): boolean {
  return fq.fakeQuantState !== 'CALIBRATION';
}

/**
 * Throws OnnxExportError when the export's opset cannot write `fq`: int16 needs opset 21, a
 * per-channel scale opset 13. `where` names the fake-quant (its module path).
 */
export function checkQdqOpset(b: OnnxBuilder, fq: FakeQuantize, where: string): void {
  if (fq.dtype === 'qint16' && b.opset < INT16_QDQ_OPSET)
    throw new OnnxExportError(
      `exportOnnx: fake-quant '${where}' is qint16, and QuantizeLinear / DequantizeLinear take int16 only from ` +
        `opset ${INT16_QDQ_OPSET}; export with { opset: ${INT16_QDQ_OPSET} } (this export is opset ${b.opset})`,
      { neededOpset: INT16_QDQ_OPSET },
    );
  if (fq.options.chAxis >= 0 && b.opset < PER_CHANNEL_QDQ_OPSET)
    throw new OnnxExportError(
      `exportOnnx: fake-quant '${where}' has one scale per channel, and QuantizeLinear / DequantizeLinear take an ` +
        `axis only from opset ${PER_CHANNEL_QDQ_OPSET}; export with { opset: ${PER_CHANNEL_QDQ_OPSET} } or later (this export is opset ${b.opset})`,
      { neededOpset: PER_CHANNEL_QDQ_OPSET },
    );
}

/** The scale (float32) and zero point (int8 / int16 zeros) initializers of `fq`, scalars when per tensor. */
function scaleAndZeroPoint(b: OnnxBuilder, fq: FakeQuantize, base: string): [string, string] {
  const scale = Float32Array.from(fq.scale.values());
  const shape = fq.options.chAxis >= 0 ? [scale.length] : [];
  const s = b.floatConst(Array.from(scale), `${base}_scale`, shape);
  const zp = intConstOf(b, new Array<number>(scale.length).fill(0), elemOf(fq), `${base}_zero_point`, shape);
  return [s, zp];
}

function axisAttr(fq: FakeQuantize, axis: number): { axis?: number } {
  return fq.options.chAxis >= 0 ? { axis } : {};
}

/** Whether `fq` clamps to less than its dtype's full range (reduceRange, or quantMin / quantMax). */
function isNarrowed(fq: FakeQuantize): boolean {
  const full = quantRange(fq.dtype);
  return fq.quantMin !== full.quantMin || fq.quantMax !== full.quantMax;
}

/**
 * QuantizeLinear → DequantizeLinear of the float value `x` as `fq` computes it; returns the name of
 * the dequantized value, `outName` (made unique). A range narrower than the dtype's (reduceRange,
 * quantMin / quantMax) clips `x` to [quantMin·s, quantMax·s] first, which rounds to the same integers.
 */
export function quantizeDequantize(
  b: OnnxBuilder,
  x: string,
  fq: FakeQuantize,
  nodeName: string,
  outName: string,
  where: string,
): string {
  checkQdqOpset(b, fq, where);
  const [s, zp] = scaleAndZeroPoint(b, fq, nodeName);
  let input = x;
  if (isNarrowed(fq)) {
    if (fq.options.chAxis >= 0)
      throw new OnnxExportError(
        `exportOnnx: fake-quant '${where}' clamps to [${fq.quantMin}, ${fq.quantMax}] per channel, which QuantizeLinear cannot express; ` +
          `use the full ${fq.dtype} range (no reduceRange, quantMin / quantMax) or one scale per tensor`,
      );
    const scale = fq.scale.values()[0]!;
    const lo = b.floatConst([Math.fround(fq.quantMin * scale)], `${nodeName}_clip_min`, []);
    const hi = b.floatConst([Math.fround(fq.quantMax * scale)], `${nodeName}_clip_max`, []);
    input = b.node('Clip', [x, lo, hi], `${nodeName}_clip`)[0]!;
  }
  const axis = axisAttr(fq, fq.options.chAxis);
  const q = b.node('QuantizeLinear', [input, s, zp], `${nodeName}_quantize`, axis, [b.unique(`${nodeName}_quantized`)]);
  return b.node('DequantizeLinear', [q[0]!, s, zp], `${nodeName}_dequantize`, axis, [b.unique(outName)])[0]!;
}

/** The integers `fq` rounds `w` to (its rounding, clamped to its range), one scale per index of `chAxis`. */
export function quantizedWeightValues(w: Tensor, fq: FakeQuantize): Int32Array {
  const v = w.values();
  const s = fq.scale.values();
  const round = roundingFunction(fq.rounding);
  const axis = fq.options.chAxis;
  const inner = axis < 0 ? v.length : w.shape.slice(axis + 1).reduce((a, d) => a * d, 1);
  const channels = axis < 0 ? 1 : w.shape[axis]!;
  const out = new Int32Array(v.length);
  for (let i = 0; i < v.length; i++) {
    const scale = s[Math.floor(i / inner) % channels]!;
    const r = round(v[i]! / scale);
    out[i] = r < fq.quantMin ? fq.quantMin : r > fq.quantMax ? fq.quantMax : r;
  }
  return out;
}

/**
 * The weight `w` as `fq` fake-quantizes it: its integers (computed here with QTK's rounding, so
 * they are exactly QTK's) as an int8 / int16 initializer `<base>_quantized`, then DequantizeLinear
 * (per channel along `fq`'s axis). With `transpose`, a 2-d weight is written transposed (for MatMul),
 * its channel axis moving from 0 to 1. Returns the dequantized weight's name, `<base>` (made unique).
 */
export function dequantizedWeight(
  b: OnnxBuilder,
  w: Tensor,
  fq: FakeQuantize,
  base: string,
  where: string,
  transpose = false,
): string {
  checkQdqOpset(b, fq, where);
  let q = quantizedWeightValues(w, fq);
  let shape = [...w.shape];
  let axis = fq.options.chAxis;
  if (transpose) {
    const [rows, cols] = [shape[0]!, shape[1]!];
    const t = new Int32Array(q.length);
    for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) t[c * rows + r] = q[r * cols + c]!;
    q = t;
    shape = [cols, rows];
    if (axis >= 0) axis = 1 - axis;
  }
  const ints = intConstOf(b, q, elemOf(fq), `${base}_quantized`, shape);
  const [s, zp] = scaleAndZeroPoint(b, fq, base);
  return b.node('DequantizeLinear', [ints, s, zp], `${base}_dequantize`, axisAttr(fq, axis), [b.unique(base)])[0]!;
}

/** A float weight or bias as an initializer (a weight whose fake-quant only observes, or none). */
export function floatParameter(b: OnnxBuilder, t: Tensor, name: string, transpose = false): string {
  if (!transpose) return b.tensor(t, name);
  const [rows, cols] = [t.shape[0]!, t.shape[1]!];
  const v = t.values();
  const out = new Float32Array(v.length);
  for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) out[c * rows + r] = v[r * cols + c]!;
  return b.tensor(new Tensor({ data: out, shape: [cols, rows], dtype: 'float32' }), name);
}
