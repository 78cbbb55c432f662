import { Tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { Dequantize, Quantize } from './modules/quantize.js';
import { QTensor, STORAGE_DTYPE } from './qtensor.js';

const f32 = (v: number[], shape = [v.length]) => new Tensor({ data: Float32Array.from(v), shape, dtype: 'float32' });

describe('QTensor', () => {
  it('fromInts saturates to the dtype and stores in the storage dtype', () => {
    const q = QTensor.fromInts([300, -300, 5, -5], [4], [0.5], 'qint8');
    expect(q.data.dtype).toBe('int8');
    expect(Array.from(q.ints())).toEqual([127, -128, 5, -5]);
    expect(q.tensorScale).toBe(0.5);
    expect(Array.from(QTensor.fromInts([40000, -40000], [2], [1], 'qint16').ints())).toEqual([32767, -32768]);
    expect(Array.from(QTensor.fromInts([2 ** 31, -(2 ** 32)], [2], [1], 'qint32').ints())).toEqual([
      2147483647, -2147483648,
    ]);
    expect(STORAGE_DTYPE.qbool).toBe('bool');
  });

  it('dequantizes per tensor and per channel', () => {
    const q = QTensor.fromInts([1, -2, 3, 4, -5, 6], [1, 2, 3], [0.25], 'qint8');
    expect([...q.dequantize().values()]).toEqual([0.25, -0.5, 0.75, 1, -1.25, 1.5]);
    const pc = QTensor.fromInts([1, -2, 3, 4, -5, 6], [1, 2, 3], [0.5, 2], 'qint32', 1);
    expect([...pc.dequantize().values()]).toEqual([0.5, -1, 1.5, 8, -10, 12]);
    expect(pc.dequantize().shape).toEqual([1, 2, 3]);
    const last = QTensor.fromInts([1, 1, 1, 1], [2, 2], [1, 3], 'qint16', 1);
    expect([...last.dequantize().values()]).toEqual([1, 3, 1, 3]);
  });

  it('keeps scales as float32', () => {
    expect(QTensor.fromInts([1], [1], [0.1], 'qint8').tensorScale).toBe(Math.fround(0.1));
  });

  it('rejects mismatched storage and scale lengths, and a single scale of a per-channel tensor', () => {
    const i8 = new Tensor({ data: Int8Array.of(1, 2), shape: [2], dtype: 'int8' });
    expect(() => new QTensor(i8, [1], 'qint16')).toThrow(/stored as int16/);
    expect(() => new QTensor(i8, [1, 2], 'qint8')).toThrow(/per-tensor scale has 1 element/);
    expect(() => new QTensor(i8, [1], 'qint8', 0)).toThrow(/axis 0 has 2 elements/);
    expect(() => new QTensor(i8, [1, 2], 'qint8', 0).tensorScale).toThrow(/no single scale/);
    const w = new QTensor(i8, [0.5], 'qint8').withData(
      new Tensor({ data: Int8Array.of(7, 8), shape: [2], dtype: 'int8' }),
    );
    expect(Array.from(w.ints())).toEqual([7, 8]);
    expect(w.tensorScale).toBe(0.5);
  });
});

describe('Quantize / Dequantize', () => {
  const x = [0.25, -0.25, 0.75, -0.75, 1.25, -1.25, 100, -100, 0.1, -0.3];
  it('half_up: q = sat(rhu(x / s), qint8)', () => {
    const q = new Quantize({ scale: Float32Array.of(0.5), dtype: 'qint8' }, 'half_up').call(f32(x)) as QTensor;
    expect(q).toBeInstanceOf(QTensor);
    expect(q.dtype).toBe('qint8');
    expect(Array.from(q.ints())).toEqual([1, 0, 2, -1, 3, -2, 127, -128, 0, -1]);
  });
  it('half_even: ties to even', () => {
    const q = new Quantize({ scale: Float32Array.of(0.5), dtype: 'qint8' }, 'half_even').call(f32(x)) as QTensor;
    expect(Array.from(q.ints())).toEqual([0, 0, 2, -2, 2, -2, 127, -128, 0, -1]);
  });
  it('saturates qint16 and keeps the shape; Dequantize multiplies back', () => {
    const quant = new Quantize({ scale: Float32Array.of(2 ** -8), dtype: 'qint16' });
    expect(quant.rounding).toBe('half_up');
    const q = quant.call(f32([1e6, -1e6, 1, -0.5], [2, 2])) as QTensor;
    expect(q.data.dtype).toBe('int16');
    expect(q.shape).toEqual([2, 2]);
    expect(Array.from(q.ints())).toEqual([32767, -32768, 256, -128]);
    expect([...(new Dequantize().call(q) as Tensor).values()]).toEqual([32767 / 256, -128, 1, -0.5]);
  });
  it('uses the float32 scale', () => {
    // float32(0.15) / float32(0.1) = 1.50000004 -> 2 (float64 0.15 / 0.1 = 1.4999999999999998 would give 1)
    const q = new Quantize({ scale: Float32Array.of(0.1), dtype: 'qint8' }).call(f32([0.15])) as QTensor;
    expect(q.tensorScale).toBe(Math.fround(0.1));
    expect(Array.from(q.ints())).toEqual([2]);
  });
  it('rejects per-channel scales, non-float inputs and non-quantized dequantize inputs', () => {
    expect(() => new Quantize({ scale: Float32Array.of(0.1, 0.2), dtype: 'qint8' })).toThrow(/per tensor/);
    const i8 = new Tensor({ data: Int8Array.of(1), shape: [1], dtype: 'int8' });
    expect(() => new Quantize({ scale: Float32Array.of(0.1), dtype: 'qint8' }).call(i8)).toThrow(/float32/);
    expect(() => new Dequantize().call(f32([1]) as never)).toThrow(/quantized tensor/);
  });
});
