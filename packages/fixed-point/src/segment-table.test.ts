import { describe, expect, it } from 'vitest';
import * as nl from './nonlinear-functions.js';
import { applySegmentTable, buildSegmentTable, evalSegment, segmentY16, type SegmentTableV1 } from './segment-table.js';

const ALL_INT16 = Int16Array.from({ length: 65536 }, (_, i) => i - 32768);
const identity: nl.NonlinearFunction = { name: 'identity', f: (x) => x, odd: false };

/** max |table − sat(rhu(f(q·s_in)/s_out))| over all int16 inputs, in output steps. */
function maxError(fn: nl.NonlinearFunction, t: SegmentTableV1): number {
  const y = applySegmentTable(t, ALL_INT16);
  const [lo, hi] = t.outDtype === 'qint16' ? [-32768, 32767] : [-128, 127];
  let max = 0;
  for (let i = 0; i < 65536; i++) {
    const v = Math.floor(fn.f((i - 32768) * t.sIn) / t.sOut + 0.5);
    const want = v < lo ? lo : v > hi ? hi : v;
    max = Math.max(max, Math.abs(y[i]! - want));
  }
  return max;
}

describe('buildSegmentTable: layout and arithmetic', () => {
  // identity on s_in = s_out = 1/256: g(q) = q is non-constant everywhere, so B[0] = −32768, B[6] = 32767
  const t = buildSegmentTable(identity, { sIn: 1 / 256, sOut: 1 / 256, outDtype: 'qint16' });

  it('divides the active range evenly on the input grid', () => {
    // B[k] = −32768 + rhu(65535·k/6): 10922.5 → 10923, 21845, 32767.5 → 32768, 43690, 54612.5 → 54613
    expect(t.B).toEqual([-32768, -21845, -10923, 0, 10922, 21845, 32767, 32767]);
    expect(t.version).toBe(1);
    expect(t.tables.map((x) => x.length)).toEqual([64, 64, 64, 64, 64, 64]);
    expect(t.flags).toEqual({ multiplierSaturated: false, degenerateSegments: [] });
  });

  it('indexes a table segment with 8 fractional bits', () => {
    // segment 4 = (0, 10922]: fitMul(63·256/10922) = 16128/10922 = 1.47665; ·2^14 = 24193.47 → (24193, 14)
    expect(t.index[3]).toEqual({ alpha: 24193, r: 14 });
    // segment 1, width 10923: 16128·2^14/10923 = 24191.26 → 24191
    expect(t.index[0]).toEqual({ alpha: 24191, r: 14 });
    // T_4[j] = rhu(j·10922/63): 0, 173.37 → 173, 346.73 → 347
    expect(t.tables[3]!.slice(0, 3)).toEqual([0, 173, 347]);
    expect(t.tables[3]![63]).toBe(10922);
    // x = 100: u = shrR(100·24193, 14) = floor(2427492/16384) = 148 → i = 0, φ = 148;
    // y16 = 0 + shrR(173·148, 8) = floor((25604 + 128)/256) = 100
    expect(segmentY16(t, 100)).toBe(100);
    // x = 300: u = floor((7257900 + 8192)/16384) = 443 → i = 1, φ = 187; 173 + shrR(174·187, 8) = 173 + 127 = 300
    expect(segmentY16(t, 300)).toBe(300);
    // x = B[4] = 10922: u = floor((264235946 + 8192)/16384) = 16128 = 63·256 → T[63] (T[64] := T[63] never read past)
    expect(segmentY16(t, 10922)).toBe(10922);
    // the clamp: x = 1 in segment 4 gives u = shrR(24193, 14) = 1 → y16 = shrR(173, 8) = 1
    expect(segmentY16(t, 1)).toBe(1);
  });

  it('has one-point line segments at the ends of a range with no constant tail', () => {
    // segment 0 is x <= −32768: slope 0 → fitMul(0) = (0, 31), β = −32768·2^31
    expect(t.lines[0]).toEqual({ alpha: 0, sign: 1, r: 31, beta: -32768 * 2 ** 31 });
    expect(t.lines[1]).toEqual({ alpha: 0, sign: 1, r: 31, beta: 32767 * 2 ** 31 });
    expect(evalSegment(t, -32768)).toBe(-32768);
    expect(evalSegment(t, 32767)).toBe(32767);
  });

  it('int8 output is sat(shrR(y16, 8)) on s_o = s_out/256', () => {
    const t8 = buildSegmentTable(identity, { sIn: 1 / 256, sOut: 1, outDtype: 'qint8' });
    expect(t8.sO).toBe(1 / 256);
    expect(t8.tables).toEqual(t.tables); // same int16 grid
    // y16 = q here: shrR(100, 8) = 0, shrR(200, 8) = 1, shrR(−128, 8) = 0 (−0.5 rounds up), shrR(−129, 8) = −1
    const q = Int16Array.of(100, 200, -128, -129, -32768, 32767);
    expect(Array.from(applySegmentTable(t8, q))).toEqual([0, 1, 0, -1, -128, 127]);
    expect(applySegmentTable(t8, q)).toBeInstanceOf(Int8Array);
    expect(applySegmentTable(t, q)).toBeInstanceOf(Int16Array);
    expect(maxError(identity, t8)).toBeLessThanOrEqual(1); // y16 off by one can cross a rounding boundary
    expect(maxError(identity, t)).toBeLessThanOrEqual(1);
  });

  it('puts constant tails on lines: hardsigmoid is 0 below −3 and 1 above 3', () => {
    // s_in = s_out = 1/4096: g(q) = rhu(q/6 + 2048) between the tails; g(−12286) = rhu(0.33) = 0 is the last
    // 0 of the left tail, g(12285) = rhu(4095.5) = 4096 the first 4096 of the right tail
    const h = buildSegmentTable(nl.hardsigmoid, { sIn: 1 / 4096, sOut: 1 / 4096, outDtype: 'qint16' });
    expect(h.B[0]).toBe(-12286);
    expect(h.B[6]).toBe(12285);
    // line 7 through (12285, 4095.5) and (32767, 4096): slope 0.5/20482 = 2.441e-5 → fitMul → (26214, 30)
    expect(h.lines[1].alpha).toBe(Math.floor((0.5 / 20482) * 2 ** 30 + 0.5));
    expect(h.lines[1].r).toBe(30);
    for (const q of [-32768, -20000, -12287, -12286]) expect(evalSegment(h, q)).toBe(0);
    for (const q of [12285, 20000, 32767]) expect(evalSegment(h, q)).toBe(4096);
    expect(maxError(nl.hardsigmoid, h)).toBeLessThanOrEqual(1);
  });

  it('curvature dividing crowds the points where √|f″| is large', () => {
    const c = buildSegmentTable(nl.reciprocal, {
      sIn: 8 / 32767.5,
      sOut: 64 / 32767.5,
      outDtype: 'qint16',
      dividing: 'curvature',
    });
    const e = buildSegmentTable(nl.reciprocal, { sIn: 8 / 32767.5, sOut: 64 / 32767.5, outDtype: 'qint16' });
    expect(c.B[0]).toBe(e.B[0]);
    expect(c.B[6]).toBe(e.B[6]);
    expect(c.B[1]! - c.B[0]!).toBeLessThan((e.B[1]! - e.B[0]!) / 10);
    for (let k = 1; k < 7; k++) expect(c.B[k]!).toBeGreaterThanOrEqual(c.B[k - 1]!);
  });
});

describe('odd functions, saturation, edge scales', () => {
  it('fits x >= 0 only and mirrors, −32768 from the segment 7 line at 32768', () => {
    const t = buildSegmentTable(nl.tanh, { sIn: 4 / 32767.5, sOut: 1 / 32767.5, outDtype: 'qint16' });
    expect(t.odd).toBe(true);
    expect(t.B[0]).toBe(0); // the range fitted starts at 0; g(1) ≠ g(0)
    for (let q = 1; q <= 32767; q += 7) expect(evalSegment(t, -q)).toBe(-evalSegment(t, q));
    const l = t.lines[1];
    const y32768 = Math.floor((32768 * l.sign * l.alpha + l.beta + 2 ** (l.r - 1)) / 2 ** l.r);
    expect(evalSegment(t, -32768)).toBe(-y32768);
    // int8 output mirrors y16 before the rounding shift: y16 = ±128 gives 1 and 0 (half up), not ±1
    const t8 = buildSegmentTable(identity, { sIn: 1 / 256, sOut: 1, outDtype: 'qint8' });
    const odd8 = { ...t8, odd: true };
    expect([evalSegment(odd8, 128), evalSegment(odd8, -128)]).toEqual([1, 0]);
  });

  it('saturates poles and overflow to the output range', () => {
    const r = buildSegmentTable(nl.reciprocal, { sIn: 1 / 256, sOut: 1 / 256, outDtype: 'qint16' });
    expect(evalSegment(r, 0)).toBe(32767); // 1/0 = +∞
    expect(evalSegment(r, 1)).toBe(32767); // 256 real = 65536 steps
    expect(evalSegment(r, -1)).toBe(-32767); // mirrored
    // 1/1 = 256 steps; interpolating a convex function from its table lies above it (even spacing: error 5 here)
    expect(evalSegment(r, 256)).toBeGreaterThanOrEqual(256);
    expect(evalSegment(r, 256)).toBeLessThanOrEqual(262);
    const lg = buildSegmentTable(nl.log, { sIn: 16 / 32767.5, sOut: 8 / 32767.5, outDtype: 'qint8' });
    for (const q of [-32768, -5, 0]) expect(evalSegment(lg, q)).toBe(-128);
    const ex = buildSegmentTable(nl.exp, { sIn: 10 / 32767.5, sOut: 1 / 32767.5, outDtype: 'qint16' });
    expect(evalSegment(ex, 32767)).toBe(32767); // e^10 ≫ 1
    expect(evalSegment(ex, -32768)).toBe(1); // e^−10 = 4.5e−5 → 1.49 → 1
  });

  it('tiny scales: everything saturated is one constant line and six degenerate segments', () => {
    const t = buildSegmentTable(nl.exp, { sIn: 1e-9, sOut: 1e-9, outDtype: 'qint16' });
    expect(t.B).toEqual([32767, 32767, 32767, 32767, 32767, 32767, 32767, 32767]);
    expect(t.flags.degenerateSegments).toEqual([1, 2, 3, 4, 5, 6]);
    expect(Array.from(applySegmentTable(t, Int16Array.of(-32768, 0, 32767)))).toEqual([32767, 32767, 32767]);
  });

  it('equal scales: identity within one step; narrow active ranges give degenerate segments', () => {
    const s = 0.0371;
    expect(
      maxError(identity, buildSegmentTable(identity, { sIn: s, sOut: s, outDtype: 'qint16' })),
    ).toBeLessThanOrEqual(1);
    // hardsigmoid on s_in = 2: active q in [−2, 2]; B[k] = −2 + rhu(4k/6) = −1, −1, 0, 1, 1
    const h = buildSegmentTable(nl.hardsigmoid, { sIn: 2, sOut: 1 / 32767.5, outDtype: 'qint16' });
    expect(h.B).toEqual([-2, -1, -1, 0, 1, 1, 2, 32767]);
    expect(h.flags.degenerateSegments).toEqual([2, 5]);
    expect(h.index[0]).toEqual({ alpha: 32256, r: 1 }); // fitMul(16128): 16128·2 = 32256 fits, ·4 does not
    expect(maxError(nl.hardsigmoid, h)).toBe(0);
  });

  it('is plain data: a JSON round trip evaluates the same', () => {
    const t = buildSegmentTable(nl.gelu(), {
      sIn: 6 / 32767.5,
      sOut: 6 / 127.5,
      outDtype: 'qint8',
      dividing: 'curvature',
    });
    const back = JSON.parse(JSON.stringify(t)) as SegmentTableV1;
    expect(back).toEqual(t);
    expect(Array.from(applySegmentTable(back, ALL_INT16))).toEqual(Array.from(applySegmentTable(t, ALL_INT16)));
    expect(() => applySegmentTable({ ...t, version: 2 } as unknown as SegmentTableV1, ALL_INT16)).toThrow(/version/);
    expect(() => buildSegmentTable(nl.tanh, { sIn: 1, sOut: 1, outDtype: 'qint32' as 'qint16' })).toThrow(/outDtype/);
    expect(() => buildSegmentTable(nl.tanh, { sIn: -1, sOut: 1, outDtype: 'qint16' })).toThrow(/sIn/);
  });
});

// The documented bounds (docs/march-numerics.md), in output steps: [input range, output range,
// int16 even, int8 even, int16 curvature, int8 curvature]. s_in = input range / 32767.5;
// s_out = output range / 32767.5 (int16) or / 127.5 (int8).
const BOUNDS: [nl.NonlinearFunction, number, number, number, number, number, number][] = [
  [nl.sigmoid, 8, 1, 3, 1, 3, 1],
  [nl.tanh, 4, 1, 3, 1, 2, 1],
  [nl.exp, 10, Math.exp(2), 8, 1, 7, 1],
  [nl.silu, 8, 8, 2, 1, 3, 1],
  [nl.gelu(), 6, 6, 2, 1, 3, 1],
  [nl.gelu('tanh'), 6, 6, 2, 1, 3, 1],
  [nl.reciprocal, 8, 64, 4400, 17, 26, 1],
  [nl.sqrt, 16, 4, 470, 3, 4, 1],
  [nl.rsqrt, 16, 8, 4200, 17, 7, 1],
  [nl.log, 16, 8, 10300, 41, 5, 1],
  [nl.pow(2), 4, 16, 3, 1, 3, 1],
  [nl.sin, 2 * Math.PI, 1, 7, 1, 7, 1],
  [nl.cos, 2 * Math.PI, 1, 7, 1, 8, 1],
  [nl.erf, 4, 1, 3, 1, 2, 1],
  [nl.softplus(), 8, 8, 2, 1, 3, 1],
  [nl.elu(), 8, 8, 3, 1, 10, 1],
  [nl.leakyRelu(), 8, 8, 9, 1, 2, 1],
  [nl.hardsigmoid, 4, 1, 2, 1, 3, 1],
  [nl.hardswish, 6, 6, 2, 1, 48, 1],
];

describe('segment table error over all 65536 int16 inputs, against the float function on the output grid', () => {
  for (const [fn, xr, yr, e16, e8, c16, c8] of BOUNDS) {
    it(`${fn.name}: int16 ≤ ${e16} / int8 ≤ ${e8} (even), int16 ≤ ${c16} / int8 ≤ ${c8} (curvature)`, () => {
      const sIn = xr / 32767.5;
      const errs = (['even', 'curvature'] as const).flatMap((dividing) =>
        (['qint16', 'qint8'] as const).map((outDtype) =>
          maxError(
            fn,
            buildSegmentTable(fn, { sIn, sOut: yr / (outDtype === 'qint16' ? 32767.5 : 127.5), outDtype, dividing }),
          ),
        ),
      );
      expect(errs[0]).toBeLessThanOrEqual(e16);
      expect(errs[1]).toBeLessThanOrEqual(e8);
      expect(errs[2]).toBeLessThanOrEqual(c16);
      expect(errs[3]).toBeLessThanOrEqual(c8);
    });
  }
});

describe('tuned tables: inputRange and explicit dividing points', () => {
  /** max |table − f(q·s_in)/s_out| over the int16 inputs in [lo, hi] (unrounded target), in output steps. */
  function errorOn(fn: nl.NonlinearFunction, t: SegmentTableV1, lo: number, hi: number): number {
    let max = 0;
    for (let q = Math.ceil(lo / t.sIn); q <= Math.floor(hi / t.sIn); q++)
      max = Math.max(max, Math.abs(evalSegment(t, q) - fn.f(q * t.sIn) / t.sOut));
    return max;
  }
  const sIn = 16 / 32767.5;
  const sOut = 8 / 32767.5;

  it('an inputRange puts the six tables over the range, and the data there gains precision', () => {
    const plain = buildSegmentTable(nl.log, { sIn, sOut, outDtype: 'qint16', dividing: 'curvature' });
    const tuned = buildSegmentTable(nl.log, {
      sIn,
      sOut,
      outDtype: 'qint16',
      dividing: 'curvature',
      inputRange: [0.5, 4],
    });
    expect([tuned.B[0], tuned.B[6]]).toEqual([Math.floor(0.5 / plain.sIn), Math.ceil(4 / plain.sIn)]);
    expect(tuned.inputRange).toEqual([0.5, 4]);
    expect(plain.inputRange).toBeUndefined();
    // measured 3.49 → 1.03 output steps on [0.5, 4]
    expect(errorOn(nl.log, plain, 0.5, 4)).toBeGreaterThan(3);
    expect(errorOn(nl.log, tuned, 0.5, 4)).toBeLessThan(1.1);
    // outside the range the two lines carry the function, as for the default tails
    expect(evalSegment(tuned, 32767)).toBeGreaterThan(evalSegment(tuned, tuned.B[6]!));
  });

  it('an inputRange never widens the active range; an odd function fits [0, max(|lo|, |hi|)]', () => {
    // hardsigmoid changes only on (−3, 3): a range [−5, 1] keeps B[0] at the last 0 of the left tail
    const h = buildSegmentTable(nl.hardsigmoid, {
      sIn: 1 / 4096,
      sOut: 1 / 4096,
      outDtype: 'qint16',
      inputRange: [-5, 1],
    });
    expect([h.B[0], h.B[6]]).toEqual([-12286, 4096]);
    const t = buildSegmentTable(nl.tanh, {
      sIn: 4 / 32767.5,
      sOut: 1 / 32767.5,
      outDtype: 'qint16',
      inputRange: [-0.5, 1],
    });
    expect([t.B[0], t.B[6]]).toEqual([0, Math.ceil(1 / t.sIn)]);
  });

  it('explicit dividing points snap to the input grid, clamped to the fitted grid', () => {
    const t = buildSegmentTable(nl.sigmoid, {
      sIn: 8 / 32767.5,
      sOut: 1 / 32767.5,
      outDtype: 'qint16',
      dividing: [-20, -2, -1, 0, 1, 2, 3],
    });
    expect(t.dividing).toBe('explicit');
    expect(t.B).toEqual([-32768, ...[-2, -1, 0, 1, 2, 3].map((d) => Math.floor(d / t.sIn + 0.5)), 32767]);
    expect(errorOn(nl.sigmoid, t, -2, 3)).toBeLessThan(1.2);
  });

  it('rejects options it cannot build, saying what to give', () => {
    const o = { sIn, sOut, outDtype: 'qint16' } as const;
    expect(() => buildSegmentTable(nl.tanh, { ...o, dividing: [-1, 0, 1, 2, 3, 4, 5] })).toThrow(
      /tanh is odd, so its table fits x >= 0/,
    );
    expect(() => buildSegmentTable(nl.log, { ...o, dividing: [1, 2, 3] })).toThrow(/7 finite numbers/);
    expect(() => buildSegmentTable(nl.log, { ...o, dividing: [1, 2, 3, 2, 5, 6, 7] })).toThrow(/non-decreasing/);
    expect(() => buildSegmentTable(nl.log, { ...o, dividing: [0, 1, 2, 3, 4, 5, 6], inputRange: [0, 6] })).toThrow(
      /either inputRange or explicit/,
    );
    expect(() => buildSegmentTable(nl.log, { ...o, inputRange: [4, 1] })).toThrow(/finite lo < hi/);
  });
});
