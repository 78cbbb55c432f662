import { DTypeError, Generator, linear, matmul, ShapeError, Tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { intLinear, intMatmul } from './int-matmul.js';

const I32_MAX = 2147483647;
const I32_MIN = -2147483648;
const sat32 = (v: number) => Math.min(I32_MAX, Math.max(I32_MIN, v));

function ints(g: Generator, shape: number[], lo: number, hi: number, dtype: 'int8' | 'int16'): Tensor {
  const n = shape.reduce((p, d) => p * d, 1);
  const data = dtype === 'int8' ? new Int8Array(n) : new Int16Array(n);
  for (let i = 0; i < n; i++) data[i] = lo + g.int(hi - lo + 1);
  return new Tensor({ data, shape, dtype });
}

/** Direct float64 x·wᵀ over the last dim, saturated. */
function refLinear(x: Tensor, w: Tensor): number[] {
  const [cout, k] = w.shape as [number, number];
  const xv = x.values();
  const wv = w.values();
  const out: number[] = [];
  for (let r = 0; r < x.size / k; r++)
    for (let o = 0; o < cout; o++) {
      let s = 0;
      for (let i = 0; i < k; i++) s += xv[r * k + i]! * wv[o * k + i]!;
      out.push(sat32(s));
    }
  return out;
}

/** Direct float64 batched product of a [...A, M, K] and b [...B, K, N] with NumPy broadcasting of the batch dims. */
function refMatmul(a: Tensor, b: Tensor): { data: number[]; batch: number[] } {
  const [m, k] = a.shape.slice(-2) as [number, number];
  const n = b.shape[b.ndim - 1]!;
  const ba = a.shape.slice(0, -2);
  const bb = b.shape.slice(0, -2);
  const rank = Math.max(ba.length, bb.length);
  const pa = [...new Array<number>(rank - ba.length).fill(1), ...ba];
  const pb = [...new Array<number>(rank - bb.length).fill(1), ...bb];
  const batch = pa.map((d, i) => Math.max(d, pb[i]!));
  const av = a.values();
  const bv = b.values();
  const data: number[] = [];
  const total = batch.reduce((p, d) => p * d, 1);
  for (let t = 0; t < total; t++) {
    let rem = t;
    let ia = 0;
    let ib = 0;
    let sa = 1;
    let sb = 1;
    for (let d = rank - 1; d >= 0; d--) {
      const idx = rem % batch[d]!;
      rem = Math.floor(rem / batch[d]!);
      ia += (pa[d] === 1 ? 0 : idx) * sa;
      ib += (pb[d] === 1 ? 0 : idx) * sb;
      sa *= pa[d]!;
      sb *= pb[d]!;
    }
    for (let i = 0; i < m; i++)
      for (let j = 0; j < n; j++) {
        let s = 0;
        for (let q = 0; q < k; q++) s += av[(ia * m + i) * k + q]! * bv[(ib * k + q) * n + j]!;
        data.push(sat32(s));
      }
  }
  return { data, batch };
}

function expectValues(y: Tensor, shape: number[], data: number[]): void {
  expect(y.dtype).toBe('int32');
  expect(y.shape).toEqual(shape);
  const v = y.values();
  let bad = 0;
  for (let i = 0; i < data.length; i++) if (v[i] !== data[i]) bad++;
  expect(bad).toBe(0);
}

describe('intLinear', () => {
  it('matches direct sums for int8 with leading dims', () => {
    const g = new Generator(1);
    const x = ints(g, [3, 5, 20], -128, 127, 'int8');
    const w = ints(g, [7, 20], -128, 127, 'int8');
    expectValues(intLinear(x, w), [3, 5, 7], refLinear(x, w));
  });

  it('chunks a long int8 reduction (K = 2000) whose float32 sum would round', () => {
    const g = new Generator(2);
    const x = ints(g, [4, 2000], 100, 127, 'int8');
    const w = ints(g, [3, 2000], 100, 127, 'int8');
    const ref = refLinear(x, w);
    expect(Math.min(...ref)).toBeGreaterThan(2 ** 24);
    expectValues(intLinear(x, w), [4, 3], ref);
    const f = linear(x.toType('float32'), w.toType('float32')).values();
    expect(ref.some((v, i) => v !== f[i])).toBe(true);
  });

  it('is exact for int16 inputs at full range (byte split), both signs', () => {
    const g = new Generator(3);
    const x = ints(g, [6, 300], -32768, 32767, 'int16');
    const w = ints(g, [5, 300], -128, 127, 'int8');
    expectValues(intLinear(x, w), [6, 5], refLinear(x, w));
    const xp = ints(g, [2, 300], 30000, 32767, 'int16');
    const wp = ints(g, [2, 300], 100, 127, 'int8');
    expectValues(intLinear(xp, wp), [2, 2], refLinear(xp, wp));
  });

  it('saturates to int32', () => {
    // 600 · 32767 · 127 ≈ 2.5e9 > 2^31 − 1; −128 weights go below −2^31.
    const x = new Tensor({ data: new Int16Array(600).fill(32767), shape: [1, 600], dtype: 'int16' });
    const wd = new Int8Array(1800);
    wd.fill(127, 0, 600).fill(-128, 600, 1200).fill(-1, 1200);
    const w = new Tensor({ data: wd, shape: [3, 600], dtype: 'int8' });
    expect(Array.from(intLinear(x, w).values())).toEqual([I32_MAX, I32_MIN, -600 * 32767]);
  });

  it('rejects bad arguments with typed errors naming intLinear', () => {
    const x = new Tensor({ data: new Int8Array(6), shape: [2, 3], dtype: 'int8' });
    const w = new Tensor({ data: new Int8Array(8), shape: [2, 4], dtype: 'int8' });
    expect(() => intLinear(x, w)).toThrow(/intLinear: the input's last dimension \(3\) must equal in_features 4/);
    expect(() => intLinear(x, w.toType('int16'))).toThrow(DTypeError);
    expect(() => intLinear(x.toType('int32'), w)).toThrow(
      /intLinear: input must have dtype 'int8' or 'int16'.*got 'int32'/,
    );
    expect(() => intLinear(x, new Tensor({ data: new Int8Array(3), shape: [3], dtype: 'int8' }))).toThrow(ShapeError);
  });
});

describe('intMatmul', () => {
  it('broadcasts batch dims like the float matmul (int8)', () => {
    const g = new Generator(4);
    const a = ints(g, [2, 1, 3, 6], -128, 127, 'int8');
    const b = ints(g, [4, 6, 5], -128, 127, 'int8');
    const ref = refMatmul(a, b);
    expect(ref.batch).toEqual([2, 4]);
    expectValues(intMatmul(a, b), [2, 4, 3, 5], ref.data);
    expect(Array.from(intMatmul(a, b).values())).toEqual(
      Array.from(matmul(a.toType('float32'), b.toType('float32')).values()),
    );
  });

  it('promotes 1-d operands and removes the added dims', () => {
    const g = new Generator(5);
    const v = ints(g, [6], -128, 127, 'int8');
    const m = ints(g, [6, 4], -128, 127, 'int8');
    const mt = ints(g, [3, 6], -128, 127, 'int8');
    const vm = refMatmul(new Tensor({ data: v.values(), shape: [1, 6], dtype: 'int8' }), m).data;
    expectValues(intMatmul(v, m), [4], vm);
    const mv = refMatmul(mt, new Tensor({ data: v.values(), shape: [6, 1], dtype: 'int8' })).data;
    expectValues(intMatmul(mt, v), [3], mv);
    const vv = intMatmul(v, v);
    expect(vv.shape).toEqual([]);
    expect(vv.item()).toBe(Array.from(v.values()).reduce((s, x) => s + x * x, 0));
  });

  it('is exact for int16 × int16 at full range (both operands split)', () => {
    const g = new Generator(6);
    const a = ints(g, [2, 5, 40], -32768, 32767, 'int16');
    const b = ints(g, [2, 40, 7], -32768, 32767, 'int16');
    expectValues(intMatmul(a, b), [2, 5, 7], refMatmul(a, b).data);
    const ap = ints(g, [3, 1], 32000, 32767, 'int16');
    const bp = ints(g, [1, 2], 30000, 32767, 'int16');
    expectValues(intMatmul(ap, bp), [3, 2], refMatmul(ap, bp).data);
  });

  it('is exact for int8 × int16 with a long reduction and saturates int16 × int16', () => {
    const g = new Generator(7);
    const a = ints(g, [3, 700], 100, 127, 'int8');
    const b = ints(g, [700, 2], 20000, 32767, 'int16');
    expectValues(intMatmul(a, b), [3, 2], refMatmul(a, b).data);
    // 3 · 32767² ≈ 3.2e9 > 2^31 − 1
    const s = new Tensor({ data: new Int16Array([32767, 32767, 32767]), shape: [1, 3], dtype: 'int16' });
    const t = new Tensor({
      data: new Int16Array([32767, -32768, 32767, -32768, 32767, -32768]),
      shape: [3, 2],
      dtype: 'int16',
    });
    expect(Array.from(intMatmul(s, t).values())).toEqual([I32_MAX, I32_MIN]);
  });

  it('rejects bad arguments with typed errors naming intMatmul', () => {
    const a = new Tensor({ data: new Int8Array(6), shape: [2, 3], dtype: 'int8' });
    const b = new Tensor({ data: new Int8Array(8), shape: [4, 2], dtype: 'int8' });
    expect(() => intMatmul(a, b)).toThrow(/intMatmul: inner dimensions differ: \[2, 3\] @ \[4, 2\]/);
    const c = new Tensor({ data: new Int8Array(2 * 3 * 3), shape: [2, 3, 3], dtype: 'int8' });
    const d = new Tensor({ data: new Int8Array(3 * 3 * 2), shape: [3, 3, 2], dtype: 'int8' });
    expect(() => intMatmul(c, d)).toThrow(/intMatmul: batch dimensions \[2\] and \[3\] do not broadcast/);
    expect(() => intMatmul(a.toType('float32'), a)).toThrow(DTypeError);
    expect(() => intMatmul(new Tensor({ data: new Int8Array(1), shape: [], dtype: 'int8' }), a)).toThrow(ShapeError);
  });
});
