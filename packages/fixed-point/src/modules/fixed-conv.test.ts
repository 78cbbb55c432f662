import { Generator, randint, Tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { planSumin, suminTerm } from '../bias.js';
import { sat } from '../integer-math.js';
import { QTensor } from '../qtensor.js';
import { planRequantizeInt16, planRequantizeWide, requantizeValue } from '../requantize.js';
import { FixedConv } from './fixed-conv.js';

const g = new Generator(5);
const ints = (lo: number, hi: number, shape: number[], dtype: 'int8' | 'int16') => {
  const t = randint(lo, hi, shape, { generator: g });
  const data = dtype === 'int8' ? Int8Array.from(t.values()) : Int16Array.from(t.values());
  return new Tensor({ data, shape, dtype });
};

/** The contract step by step on scalars: naive conv sum, + bias (sat), + sumin (sat), requantize, clamp. */
function reference(
  x: Tensor,
  w: Tensor,
  bias: Int32Array,
  e: Tensor | null,
  sumin: ReturnType<typeof planSumin> | null,
  plan: ReturnType<typeof planRequantizeWide> | null,
  act: 'relu' | 'relu6' | null,
  relu6Max: number,
): number[] {
  const [n, cin, h, wd] = x.shape as [number, number, number, number];
  const cout = w.shape[0]!;
  const xv = x.values();
  const wv = w.values();
  const ev = e?.values();
  const out: number[] = [];
  for (let b = 0; b < n; b++)
    for (let o = 0; o < cout; o++)
      for (let i = 0; i < h; i++)
        for (let j = 0; j < wd; j++) {
          let s = 0;
          for (let c = 0; c < cin; c++)
            for (let ki = 0; ki < 3; ki++)
              for (let kj = 0; kj < 3; kj++) {
                const y = i + ki - 1;
                const z = j + kj - 1;
                if (y < 0 || y >= h || z < 0 || z >= wd) continue;
                s += xv[((b * cin + c) * h + y) * wd + z]! * wv[((o * cin + c) * 3 + ki) * 3 + kj]!;
              }
          let v = sat(sat(s, 'qint32') + bias[o]!, 'qint32');
          if (ev && sumin) v = sat(v + suminTerm(ev[out.length]!, sumin, o), 'qint32');
          if (plan) v = requantizeValue(v, plan, plan.m.length === 1 ? 0 : o);
          if (act) v = Math.max(0, v);
          if (act === 'relu6' && plan) v = Math.min(v, relu6Max);
          out.push(v);
        }
  return out;
}

describe('FixedConv', () => {
  const x = ints(-128, 128, [2, 3, 5, 4], 'int8');
  const w = ints(-128, 128, [4, 3, 3, 3], 'int8');
  const bias = Int32Array.of(40000, -123456, 7, 2147483000);
  const sAcc = [0.0001, 0.0002, 0.00005, 0.0003];
  for (const [rule, planner] of [
    ['int16_intermediate', planRequantizeInt16],
    ['wide', planRequantizeWide],
  ] as const) {
    for (const act of [null, 'relu', 'relu6'] as const) {
      it(`bias + sumin + ${rule} requantize + ${act ?? 'no activation'} equals the contract step by step`, () => {
        const plan = planner(sAcc, 0.05, 'qint8');
        const e = ints(-128, 128, [2, 4, 5, 4], 'int8');
        const sumin = planSumin(0.02, sAcc);
        const conv = new FixedConv({
          kind: 'conv',
          weight: w,
          attrs: { stride: [1, 1], padding: [1, 1], dilation: [1, 1], groups: 1 },
          bias,
          sumin,
          requant: plan,
          outScale: Float32Array.of(0.05),
          activation: act,
          relu6Max: 120,
        });
        const y = conv.call(new QTensor(x, [0.01], 'qint8'), new QTensor(e, [0.02], 'qint8')) as QTensor;
        expect(y.dtype).toBe('qint8');
        expect(Array.from(y.ints())).toEqual(reference(x, w, bias, e, sumin, plan, act, 120));
      });
    }
  }
  it('a high-precision output is the int32 sum with the per-channel accumulator scale', () => {
    const conv = new FixedConv({
      kind: 'conv',
      weight: w,
      attrs: { stride: [1, 1], padding: [1, 1], dilation: [1, 1], groups: 1 },
      bias,
      sumin: null,
      requant: null,
      outScale: Float32Array.from(sAcc),
      activation: 'relu',
      relu6Max: Infinity,
    });
    const y = conv.call(new QTensor(x, [0.01], 'qint8')) as QTensor;
    expect(y.dtype).toBe('qint32');
    expect(y.axis).toBe(1);
    expect([...y.scale]).toEqual([...Float32Array.from(sAcc)]);
    expect(Array.from(y.ints())).toEqual(reference(x, w, bias, null, null, null, 'relu', 0));
  });
});
