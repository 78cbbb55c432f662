import { describe, expect, it } from 'vitest';
import { applyLookupTable, buildLookupTable } from './lookup-table.js';
import * as nl from './nonlinear-functions.js';

const ALL_INT8 = Int8Array.from({ length: 256 }, (_, i) => i - 128);

/** Realistic int8 scales: [input range, output range] → s = range / 127.5 (the observer rule). */
const RANGES: [nl.NonlinearFunction, number, number][] = [
  [nl.sigmoid, 8, 1],
  [nl.tanh, 4, 1],
  [nl.exp, 10, Math.exp(2)],
  [nl.silu, 8, 8],
  [nl.gelu(), 6, 6],
  [nl.gelu('tanh'), 6, 6],
  [nl.reciprocal, 8, 64],
  [nl.sqrt, 16, 4],
  [nl.rsqrt, 16, 8],
  [nl.log, 16, 8],
  [nl.pow(2), 4, 16],
  [nl.sin, 2 * Math.PI, 1],
  [nl.cos, 2 * Math.PI, 1],
  [nl.erf, 4, 1],
  [nl.softplus(), 8, 8],
  [nl.elu(), 8, 8],
  [nl.leakyRelu(), 8, 8],
  [nl.hardsigmoid, 4, 1],
  [nl.hardswish, 6, 6],
];

describe('buildLookupTable / applyLookupTable', () => {
  it('hand-computed entries: sigmoid with s_in = 1/16, s_out = 1/128', () => {
    const t = buildLookupTable(nl.sigmoid, 1 / 16, 1 / 128);
    expect(t[128]).toBe(64); // q = 0: 0.5·128
    expect(t[128 + 16]).toBe(94); // q = 16, x = 1: 0.7310586·128 = 93.58
    expect(t[128 - 16]).toBe(34); // x = −1: 0.2689414·128 = 34.42
    expect(t[0]).toBe(0); // x = −8: 0.000335·128 = 0.043
    expect(t[255]).toBe(127); // x = 7.9375: 0.99964·128 = 127.95 → 128, saturated
    expect(Array.from(applyLookupTable(t, Int8Array.of(0, 16, -16, -128, 127)))).toEqual([64, 94, 34, 0, 127]);
  });

  it('rounds half up at exact ties and saturates both ends', () => {
    // leaky_relu(0.5) with s_in = s_out = 1: q < 0 gives q/2 exactly
    const t = buildLookupTable(nl.leakyRelu(0.5), 1, 1);
    expect(t[128 - 3]).toBe(-1); // −1.5 → −1
    expect(t[128 - 5]).toBe(-2); // −2.5 → −2
    expect(t[128 - 128]).toBe(-64);
    expect(t[128 + 127]).toBe(127);
    // s_in/s_out = 1/2 in float32 too (0.05 and 0.1 round to float32 with the same mantissa)
    const h = buildLookupTable(nl.leakyRelu(1), 0.05, 0.1);
    expect([h[128 - 1], h[128 + 1], h[128 - 3], h[128 + 3]]).toEqual([0, 1, -1, 2]);
    const wide = buildLookupTable(nl.pow(3), 1, 1);
    expect(wide[128 + 5]).toBe(125);
    expect(wide[128 + 6]).toBe(127); // 216 saturates
    expect(wide[128 - 6]).toBe(-128);
  });

  it('equal scales make an identity-like function exact; tiny scales saturate; poles saturate', () => {
    const s = 0.0371;
    const id = buildLookupTable(nl.leakyRelu(1), s, s);
    expect(Array.from(id)).toEqual(Array.from(ALL_INT8));
    const tiny = buildLookupTable(nl.exp, 1e-9, 1e-9); // exp ≈ 1 → 1e9 steps
    expect(tiny.every((v) => v === 127)).toBe(true);
    const rec = buildLookupTable(nl.reciprocal, 1 / 8, 1 / 8);
    expect(rec[128]).toBe(127); // 1/0 = +∞
    expect(rec[128 + 1]).toBe(64); // x = 1/8 → 8 → 64 steps
    expect(rec[128 - 1]).toBe(-64);
    const lg = buildLookupTable(nl.log, 1 / 16, 1 / 16);
    expect(lg[128]).toBe(-128); // log 0 = −∞
    expect(lg[0]).toBe(-128); // outside the domain: −∞ too
    expect(lg[128 + 16]).toBe(0); // log 1
    expect(lg[128 + 32]).toBe(11); // log 2 · 16 = 11.09
  });

  it('uses float32 scales', () => {
    expect(Array.from(buildLookupTable(nl.tanh, 0.1, 0.3))).toEqual(
      Array.from(buildLookupTable(nl.tanh, Math.fround(0.1), Math.fround(0.3))),
    );
    // f(x)/s_out lands within 1e-8 of a tie, on different sides for float32 and float64 s_out
    const s64 = 2 / 3;
    const t = buildLookupTable(nl.leakyRelu(1), 1, s64); // q / fround(2/3) = q · 1.49999998...
    expect(t[128 + 1]).toBe(1); // 1.49999996 → 1 (with float64 2/3 it would be 1.5 → 2)
  });

  it('rejects bad scales, tables and NaN functions', () => {
    expect(() => buildLookupTable(nl.tanh, 0, 1)).toThrow(/sIn/);
    expect(() => buildLookupTable(nl.tanh, 1, Number.NaN)).toThrow(/sOut/);
    expect(() => buildLookupTable({ name: 'bad', f: () => Number.NaN, odd: false }, 1, 1)).toThrow(/NaN/);
    expect(() => applyLookupTable(new Int8Array(10), ALL_INT8)).toThrow(/256/);
  });

  it('is exact against sat(rhu(f(x)/s_out)) over all 256 inputs for every catalogue function', () => {
    for (const [fn, xr, yr] of RANGES) {
      const sIn = Math.fround(xr / 127.5);
      const sOut = Math.fround(yr / 127.5);
      const y = applyLookupTable(buildLookupTable(fn, sIn, sOut), ALL_INT8);
      for (let q = -128; q <= 127; q++) {
        const v = fn.f(q * sIn) / sOut;
        const want = v >= 127 ? 127 : v <= -128 ? -128 : Math.floor(v + 0.5);
        expect(y[q + 128], `${fn.name}(${q})`).toBe(Math.max(-128, Math.min(127, want)));
      }
    }
  });
});
