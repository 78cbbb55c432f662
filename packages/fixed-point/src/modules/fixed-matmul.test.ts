import { Tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { QTensor } from '../qtensor.js';
import { planRequantizeWide, requantizeValue } from '../requantize.js';
import { FixedMatMul } from './fixed-matmul.js';

const q8 = (data: number[], shape: number[], scale: number) =>
  new QTensor(new Tensor({ data: Int8Array.from(data), shape, dtype: 'int8' }), [scale], 'qint8');

describe('FixedMatMul', () => {
  it('multiplies the integers exactly and requantizes each sum from s_a·s_b (a plain loop as the reference)', () => {
    const a = [-128, 127, 3, 50, -7, 0, 99, -100, 1, 2, -3, 4]; // [2, 2, 3]
    const b = [12, -5, 127, -128, 33, 8]; // [3, 2], broadcast over the batch
    const sA = 0.02;
    const sB = 0.005;
    const sOut = 0.005;
    const requant = planRequantizeWide(Math.fround(sA) * Math.fround(sB), sOut, 'qint8');
    const m = new FixedMatMul({ requant, outScale: sOut, outDtype: 'qint8' });
    const y = m.forward(q8(a, [2, 2, 3], sA), q8(b, [3, 2], sB));
    expect(y.shape).toEqual([2, 2, 2]);
    expect(y.dtype).toBe('qint8');
    const want: number[] = [];
    for (let r = 0; r < 4; r++)
      for (let c = 0; c < 2; c++) {
        let acc = 0;
        for (let k = 0; k < 3; k++) acc += a[r * 3 + k]! * b[k * 2 + c]!;
        want.push(requantizeValue(acc, requant));
      }
    expect(Array.from(y.ints())).toEqual(want);
    expect(want.some((v) => v === 127 || v === -128)).toBe(true); // saturation is exercised
  });

  it('refuses a float or per-channel operand with a typed error naming it', () => {
    const requant = planRequantizeWide(1e-4, 0.1, 'qint8');
    const m = new FixedMatMul({ requant, outScale: 0.1, outDtype: 'qint8' });
    const x = q8([1, 2], [1, 2], 0.01);
    expect(() => m.forward(x, new Tensor({ data: new Float32Array(2), shape: [2, 1], dtype: 'float32' }))).toThrow(
      /second operand must be a quantized tensor/,
    );
    const perChannel = new QTensor(
      new Tensor({ data: Int8Array.from([1, 2]), shape: [2, 1], dtype: 'int8' }),
      [0.1, 0.2],
      'qint8',
      0,
    );
    expect(() => m.forward(perChannel, x)).toThrow(/first operand has a per-channel scale/);
  });
});
