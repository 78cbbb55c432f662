import { createObserver, quantRange, scaleFromRange } from '@qtk/spec';
import { describe, expect, it } from 'vitest';
import './register.js';
import { PerChannelMSEObserver } from './mse-per-channel.js';
import { MSEObserver } from './mse.js';
import { activations, fakeQuantMse, t } from './testing/random-data.js';

const q8 = quantRange('qint8');

/** Per channel along axis 1 of [A, C, B]: brute-force best shrink factor, written out directly. */
function bruteForce(
  v: Float32Array,
  A: number,
  C: number,
  B: number,
  stride: number,
): { min: number[]; max: number[] } {
  const min: number[] = [];
  const max: number[] = [];
  for (let c = 0; c < C; c++) {
    const vals: number[] = [];
    for (let a = 0; a < A; a++) for (let b = 0; b < B; b++) vals.push(v[(a * C + c) * B + b]!);
    const lo = Math.min(...vals);
    const hi = Math.max(...vals);
    let best = 0;
    let bestF = 1;
    for (let i = 0; i < 95; i += stride) {
      const f = 1 - 0.01 * i;
      const e = fakeQuantMse(vals, scaleFromRange(lo * f, hi * f, q8), -128, 127);
      if (i === 0 || e <= best) {
        best = e;
        bestF = f;
      }
    }
    min.push(lo * bestF);
    max.push(hi * bestF);
  }
  return { min, max };
}

describe('per-channel mse', () => {
  it('matches a brute-force search per channel, then moving-averages batches', () => {
    const [A, C, B] = [3, 5, 40];
    const v1 = activations(A * C * B, 1, 1, 0.02);
    const v2 = activations(A * C * B, 2, 2, 0.02);
    const o = createObserver('mse', { chAxis: 1, stride: 2, averagingConstant: 0.5 });
    expect(o).toBeInstanceOf(PerChannelMSEObserver);
    o.observe(t(v1, [A, C, B]));
    const r1 = bruteForce(v1, A, C, B, 2);
    expect(Array.from(o.computeQparams().scale)).toEqual(r1.min.map((m, c) => scaleFromRange(m, r1.max[c]!, q8)));
    o.observe(t(v2, [A, C, B]));
    const r2 = bruteForce(v2, A, C, B, 2);
    const lo = r1.min.map((m, c) => m + 0.5 * (r2.min[c]! - m));
    const hi = r1.max.map((m, c) => m + 0.5 * (r2.max[c]! - m));
    expect(Array.from(o.computeQparams().scale)).toEqual(lo.map((m, c) => scaleFromRange(m, hi[c]!, q8)));
    expect(o.computeQparams().chAxis).toBe(1);
  });

  it('state, merge, and the per-tensor form refusing per-channel states', () => {
    const w = activations(4 * 27, 5, 0.1, 0);
    const a = createObserver('mse', { chAxis: 0 });
    a.observe(t(w, [4, 27]));
    const b = createObserver('mse', { chAxis: 0 });
    b.load(JSON.parse(JSON.stringify(a.state())));
    expect(b.computeQparams()).toEqual(a.computeQparams());
    b.merge(a.state());
    expect(b.computeQparams()).toEqual(a.computeQparams());
    expect(createObserver('mse')).toBeInstanceOf(MSEObserver);
    expect(() => createObserver('mse').load(a.state())).toThrow();
    expect(() => new MSEObserver({ chAxis: 0 })).toThrow(/per tensor/);
  });
});
