import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { convInteger, Generator, requantizeInt32, Tensor } from '../index.js';
import type { RequantizeInt32Attrs } from '../ops/requantize-int32.js';
import type { ConvIntegerAttrs } from '../ops/conv-integer.js';
import { kernels, type TensorKernel } from '../registry.js';
import { loadWasmBackend, setWasmThreads, wasmStatus } from './wasm-backend.js';

type Kernel = TensorKernel<RequantizeInt32Attrs>;
const onWasm = kernels.kernelOn<Kernel>('RequantizeInt32', 'wasm')!;
const onCpu = kernels.kernelOn<Kernel>('RequantizeInt32', 'cpu')!;
const RANGE = { int8: [-128, 127], int16: [-32768, 32767], int32: [-2147483648, 2147483647] } as const;

/** Independent reference in BigInt, one value at a time. */
function reference(acc: number, e: number | null, a: RequantizeInt32Attrs, c: number): number {
  const at = (v: Int32Array): bigint => BigInt(v.length === 1 ? v[0]! : v[c]!);
  const sat = (x: bigint, lo: bigint, hi: bigint): bigint => (x < lo ? lo : x > hi ? hi : x);
  const floorDiv = (x: bigint, s: bigint): bigint => {
    const d = 1n << s;
    const q = x / d;
    return x < 0n && q * d !== x ? q - 1n : q;
  };
  const shrR = (x: bigint, n: bigint): bigint => (n === 0n ? x : floorDiv(x + (1n << (n - 1n)), n));
  const I32 = [-(2n ** 31n), 2n ** 31n - 1n] as const;
  let v = sat(BigInt(acc) + (a.bias ? at(a.bias) : 0n), ...I32);
  if (a.sumin && e !== null) {
    const k = at(a.sumin.k);
    const term = k < 0n ? shrR(BigInt(e) * at(a.sumin.m), at(a.sumin.n)) : BigInt(e) * at(a.sumin.m) * (1n << k);
    v = sat(v + term, ...I32);
  }
  if (a.plan) {
    let t = floorDiv(v, at(a.plan.pre));
    if (a.plan.rule === 'int16_intermediate') t = sat(t, -32768n, 32767n);
    v = shrR(t * at(a.plan.m), at(a.plan.n));
  }
  return Number(sat(v, BigInt(a.lo), BigInt(a.hi)));
}

interface Case {
  acc: Tensor;
  other: Tensor | null;
  attrs: RequantizeInt32Attrs;
}

function randomCase(gen: Generator, size: 'small' | 'big'): Case {
  const u = (n: number): number => gen.nextUint32() % n;
  const pick = <T>(xs: readonly T[]): T => xs[u(xs.length)]!;
  const channels = 1 + u(size === 'big' ? 64 : 9);
  const inner = 1 + u(size === 'big' ? 200 : 13);
  const outer = 1 + u(4);
  const len = outer * channels * inner;
  const perCh = (): number => (pick([true, false]) ? channels : 1);
  const vec = (n: number, f: () => number): Int32Array => Int32Array.from({ length: n }, f);
  // Accumulators: small, mid-size, and near the int32 limits.
  const accKind = pick(['small', 'mid', 'edge'] as const);
  const acc = vec(len, () =>
    accKind === 'small'
      ? u(4001) - 2000
      : accKind === 'mid'
        ? (gen.nextUint32() | 0) >> u(16)
        : pick([-2147483648, 2147483647, -2147483000, 2147483000]) + u(2001) - 1000,
  ).map((x) => Math.max(-2147483648, Math.min(2147483647, x)));
  const bias = pick([true, false])
    ? vec(perCh(), () => pick([u(2001) - 1000, (gen.nextUint32() | 0) >> u(8), 2147483647, -2147483648]))
    : null;
  const otherDtype = pick([null, 'int8', 'int16', 'int32'] as const);
  let other: Tensor | null = null;
  let sumin: RequantizeInt32Attrs['sumin'] = null;
  if (otherDtype) {
    const [lo, hi] = RANGE[otherDtype];
    const span = otherDtype === 'int32' ? 2 ** 32 : hi - lo + 1;
    const data =
      otherDtype === 'int8' ? new Int8Array(len) : otherDtype === 'int16' ? new Int16Array(len) : new Int32Array(len);
    for (let i = 0; i < len; i++)
      data[i] = otherDtype === 'int32' ? gen.nextUint32() | 0 : lo + (gen.nextUint32() % span);
    other = new Tensor({ data, shape: [outer, channels, inner], dtype: otherDtype });
    const sc = perCh();
    // Both branches: k < 0 (rounding shift) and k >= 0 (plain multiplier, up to shifts that overflow anything).
    const k = vec(sc, () => pick([-1, -1, 0, 1, 5, 17, 31, 32, 40, 70]));
    sumin = { m: vec(sc, () => u(32768) * pick([1, 1, -1])), n: vec(sc, () => pick([0, 1, 7, 15, 31, 40, 62, 70])), k };
  }
  const rule = pick(['wide', 'int16_intermediate'] as const);
  const pc = perCh();
  const plan = pick([true, true, true, false])
    ? {
        rule,
        pre: vec(pc, () => pick([0, 0, 1, 3, 12, 31, 40, 70])),
        m: vec(pc, () => pick([1, u(32768), 32767, 65536])),
        n: vec(pc, () => pick([0, 1, 8, 15, 23, 31, 45, 62, 70])),
      }
    : null;
  const outDtype = plan ? pick(['int8', 'int16', 'int32'] as const) : 'int32';
  const [dlo, dhi] = RANGE[outDtype];
  const act = pick(['none', 'relu', 'relu6'] as const);
  const lo = act === 'none' ? dlo : 0;
  const hi = act === 'relu6' ? Math.min(dhi, 1 + u(200)) : dhi;
  return {
    acc: new Tensor({ data: acc, shape: [outer, channels, inner], dtype: 'int32' }),
    other,
    attrs: { channels, inner, bias, sumin, plan, lo, hi, outDtype },
  };
}

const inputsOf = (c: Case): Tensor[] => (c.other ? [c.acc, c.other] : [c.acc]);

function sameBits(a: Tensor, b: Tensor): void {
  expect(a.dtype).toBe(b.dtype);
  expect(a.shape).toEqual(b.shape);
  const x = a.values();
  const y = b.values();
  for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) expect(`${i}: ${x[i]}`).toBe(`${i}: ${y[i]}`);
}

describe('RequantizeInt32', () => {
  it('the cpu kernel matches an independent BigInt reference, value by value', () => {
    const gen = new Generator(3);
    for (let t = 0; t < 300; t++) {
      const c = randomCase(gen, 'small');
      const y = (onCpu.fn(inputsOf(c), c.attrs, {}) as Tensor).values();
      const acc = c.acc.values();
      const e = c.other?.values() ?? null;
      const { channels, inner } = c.attrs;
      for (let i = 0; i < acc.length; i++) {
        const want = reference(acc[i]!, e ? e[i]! : null, c.attrs, Math.floor(i / inner) % channels);
        if (y[i] !== want) expect(`case ${t}, value ${i}: ${y[i]}`).toBe(`case ${t}, value ${i}: ${want}`);
      }
    }
  });

  it('wasm matches cpu bit for bit on random cases (both rules, sumin branches, clamps, dtypes)', () => {
    expect(wasmStatus().loaded).toBe(true);
    const gen = new Generator(5);
    for (let t = 0; t < 400; t++) {
      const c = randomCase(gen, t % 4 === 0 ? 'big' : 'small');
      sameBits(onWasm.fn(inputsOf(c), c.attrs, {}) as Tensor, onCpu.fn(inputsOf(c), c.attrs, {}) as Tensor);
    }
  });

  it('the single-thread build (wasm/gemm.wasm, loaded from bytes) runs the same kernel', () => {
    const bytes = readFileSync(fileURLToPath(new URL('../../wasm/gemm.wasm', import.meta.url)));
    const gen = new Generator(9);
    try {
      expect(loadWasmBackend(bytes)).toMatchObject({ loaded: true, source: 'bytes' });
      for (let t = 0; t < 60; t++) {
        const c = randomCase(gen, 'small');
        sameBits(onWasm.fn(inputsOf(c), c.attrs, {}) as Tensor, onCpu.fn(inputsOf(c), c.attrs, {}) as Tensor);
      }
    } finally {
      loadWasmBackend();
    }
  });

  it('hand-computed values: saturation order, floor shifts of negatives, the int16 intermediate', () => {
    const acc = new Tensor({
      data: Int32Array.from([2147483000, -7, -5, 100000, -100000, 3]),
      shape: [1, 1, 6],
      dtype: 'int32',
    });
    // bias 1000 saturates the first to 2^31 − 1; pre 1: shr(−7 + 1000) ... per value below.
    const y = requantizeInt32(acc, null, {
      channels: 1,
      inner: 6,
      bias: Int32Array.of(1000),
      plan: { rule: 'int16_intermediate', pre: Int32Array.of(1), m: Int32Array.of(3), n: Int32Array.of(2) },
      outDtype: 'int16',
    });
    // v = sat32(acc + 1000): 2147483647, 993, 995, 101000, -99000, 1003
    // t = sat16(floor(v / 2)): 32767, 496, 497, 32767, -32768, 501
    // y = floor((3t + 2) / 4): 24575, 372, 373, 24575, -24576, 376
    expect(Array.from(y.values())).toEqual([24575, 372, 373, 24575, -24576, 376]);
    const neg = new Tensor({ data: Int32Array.from([-5, -6, -7, 5]), shape: [4], dtype: 'int32' });
    const e = new Tensor({ data: Int8Array.from([-3, 3, -1, 0]), shape: [4], dtype: 'int8' });
    // sumin shrR(e·5, 1) = floor((5e + 1) / 2): -7, 8, -2, 0; then wide, pre 0, m 1, n 1: floor((v + 1) / 2)
    const z = requantizeInt32(neg, e, {
      channels: 1,
      inner: 4,
      sumin: { m: Int32Array.of(5), n: Int32Array.of(1), k: Int32Array.of(-1) },
      plan: { rule: 'wide', pre: Int32Array.of(0), m: Int32Array.of(1), n: Int32Array.of(1) },
      outDtype: 'int8',
      lo: 0,
    });
    // v: -12, 2, -9, 5 → floor((v+1)/2): -6, 1, -4, 3 → clamp at 0: 0, 1, 0, 3
    expect(Array.from(z.values())).toEqual([0, 1, 0, 3]);
  });

  it('validates its arguments', () => {
    const acc = new Tensor({ data: new Int32Array(6), shape: [1, 2, 3], dtype: 'int32' });
    expect(() => requantizeInt32(acc, null, { channels: 4, inner: 3, outDtype: 'int8' })).toThrow(/split/);
    expect(() => requantizeInt32(acc, null, { channels: 2, inner: 3, outDtype: 'int8', lo: -200 })).toThrow(/clamp/);
    expect(() =>
      requantizeInt32(acc, null, { channels: 2, inner: 3, outDtype: 'int8', bias: new Int32Array(3) }),
    ).toThrow(/length 1 or 2/);
    expect(() =>
      requantizeInt32(acc, null, {
        channels: 2,
        inner: 3,
        outDtype: 'int8',
        plan: { rule: 'wide', pre: Int32Array.of(0), m: Int32Array.of(1 << 20), n: Int32Array.of(0) },
      }),
    ).toThrow(/plan.m/);
    expect(() => requantizeInt32(acc, acc, { channels: 2, inner: 3, outDtype: 'int8' })).toThrow(/sumin/);
    const f = new Tensor({ data: new Float32Array(6), shape: [6], dtype: 'float32' });
    expect(() => requantizeInt32(f, null, { channels: 1, inner: 6, outDtype: 'int8' })).toThrow(/int32/);
  });

  for (const threads of [false, true]) {
    it(`ConvInteger with an epilogue: wasm (applied per image in wasm memory) matches cpu and conv-then-requantize (threads ${threads})`, async () => {
      setWasmThreads(threads);
      const convWasm = kernels.kernelOn<TensorKernel<ConvIntegerAttrs>>('ConvInteger', 'wasm')!;
      const convCpu = kernels.kernelOn<TensorKernel<ConvIntegerAttrs>>('ConvInteger', 'cpu')!;
      const gen = new Generator(threads ? 41 : 43);
      const u = (n: number): number => gen.nextUint32() % n;
      if (threads) {
        // The worker starts on the first job big enough to share; give it time to come up.
        const x = new Tensor({ data: new Int8Array(40 * 16 * 28 * 28), shape: [40, 16, 28, 28], dtype: 'int8' });
        convInteger(x, new Tensor({ data: new Int8Array(16 * 16 * 9), shape: [16, 16, 3, 3], dtype: 'int8' }), {
          pads: 1,
        });
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      const before = wasmStatus().workerChunks ?? 0;
      for (let t = 0; t < 30; t++) {
        // The first few are big enough for the worker to share.
        const big = threads && t < 2;
        const n = big ? 40 : 1 + u(t % 5 === 0 ? 40 : 4);
        const cin = big ? 16 : 1 + u(6);
        const cout = big ? 16 : 1 + u(9);
        const h = big ? 28 : 3 + u(12);
        const int8 = u(2) === 0;
        const xLen = n * cin * h * h;
        const xData = int8
          ? Int8Array.from({ length: xLen }, () => u(256) - 128)
          : Int16Array.from({ length: xLen }, () => u(65536) - 32768);
        const x = new Tensor({ data: xData, shape: [n, cin, h, h], dtype: int8 ? 'int8' : 'int16' });
        const w = new Tensor({
          data: Int8Array.from({ length: cout * cin * 9 }, () => u(256) - 128),
          shape: [cout, cin, 3, 3],
          dtype: 'int8',
        });
        const stride = 1 + u(2);
        const acc = convInteger(x, w, { pads: 1, stride });
        const c = randomCase(gen, 'small');
        const a = { ...c.attrs, channels: cout, inner: acc.size / (n * cout) };
        // Per-tensor vectors stay, per-channel ones are cycled to Cout values.
        const fit = (v: Int32Array | null) =>
          v && v.length !== 1 ? Int32Array.from({ length: cout }, (_, i) => v[i % v.length]!) : v;
        const epi = {
          bias: fit(a.bias),
          sumin: a.sumin ? { m: fit(a.sumin.m)!, n: fit(a.sumin.n)!, k: fit(a.sumin.k)! } : null,
          plan: a.plan ? { ...a.plan, pre: fit(a.plan.pre)!, m: fit(a.plan.m)!, n: fit(a.plan.n)! } : null,
          lo: a.lo,
          hi: a.hi,
          outDtype: a.outDtype,
        };
        let added: Tensor | null = null;
        if (c.other) {
          const len = acc.size;
          const src = c.other.values();
          const data = new (src.constructor as new (n: number) => Int8Array | Int16Array | Int32Array)(len);
          for (let i = 0; i < len; i++) data[i] = src[i % src.length]!;
          added = new Tensor({ data, shape: [...acc.shape], dtype: c.other.dtype });
        }
        const want = requantizeInt32(acc, added, { ...epi, channels: cout, inner: a.inner });
        const attrs: ConvIntegerAttrs = {
          stride: [stride, stride],
          pads: [1, 1, 1, 1],
          dilation: [1, 1],
          groups: 1,
          epilogue: { ...epi, channels: cout, inner: a.inner },
        };
        const inputs = added ? [x, w, added] : [x, w];
        sameBits(convWasm.fn(inputs, attrs, {}) as Tensor, want);
        sameBits(convCpu.fn(inputs, attrs, {}) as Tensor, want);
        sameBits(convInteger(x, w, { pads: 1, stride, epilogue: epi, added }), want);
      }
      if (threads && wasmStatus().threads === 2) expect(wasmStatus().workerChunks).toBeGreaterThan(before);
    });
  }
});
