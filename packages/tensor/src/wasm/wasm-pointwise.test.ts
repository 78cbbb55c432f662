import { describe, expect, it, vi } from 'vitest';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { add, batchNorm, Generator, randn, relu, sum, tensor, type Tensor } from '../index.js';
import type {
  BatchNormAttrs,
  BatchNormBackwardAttrs,
  BatchNormBackwardKernel,
  BatchNormKernel,
} from '../ops/batch-norm.js';
import type { ReluBackwardKernel } from '../ops/unary.js';
import { kernels, type Saved, type TensorKernel } from '../registry.js';
import { loadWasmBackend, wasmStatus } from './wasm-backend.js';
import { BATCH_NORM_MIN_ELEMENTS, ELEMENTWISE_MIN_ELEMENTS } from './wasm-pointwise-kernels.js';

const on = <F>(op: string, backend: 'cpu' | 'wasm'): F => kernels.kernelOn<F>(op, backend)!.fn;
const vals = (t: Tensor | null | undefined): Float32Array => t!.values() as Float32Array;
const EPS32 = 2 ** -24;

/** Largest |a − e| / |e| over elements (0/0 counts as 0). */
function maxRel(a: Float32Array, e: Float32Array): number {
  expect(a.length).toBe(e.length);
  let r = 0;
  for (let i = 0; i < e.length; i++) {
    const d = Math.abs(a[i]! - e[i]!);
    if (d > 0) r = Math.max(r, d / Math.abs(e[i]!));
  }
  return r;
}

/** Bit patterns, so NaN, ±0 and ±∞ must match exactly. */
const bits = (v: Float32Array): number[] => Array.from(new Uint32Array(v.buffer, v.byteOffset, v.length));

/** [N, C, ...] tensor with per-channel offsets and scales, so statistics are far from 0 and 1. */
function channelData(shape: number[], gen: Generator, offset: number): Tensor {
  const x = randn(shape, { generator: gen });
  const v = vals(x);
  const c = shape[1]!;
  const s = v.length / (shape[0]! * c);
  for (let i = 0; i < v.length; i++) {
    const ch = Math.floor(i / s) % c;
    v[i] = offset * (ch + 1) + v[i]! * (0.5 + ch / c);
  }
  return x;
}

interface BnCase {
  shape: number[];
  offset: number;
  weight: boolean;
  bias: boolean;
}

const BN_CASES: BnCase[] = [
  { shape: [64, 16, 7, 7], offset: 0, weight: true, bias: true }, // S = 49: vector tails
  { shape: [8, 6, 10, 20], offset: 100, weight: true, bias: false },
  { shape: [4096, 3], offset: 1000, weight: false, bias: true }, // S = 1
  { shape: [16, 4, 75], offset: -3, weight: false, bias: false }, // 1-d, S = 75
  { shape: [2, 3, 4, 5, 40], offset: 0.5, weight: true, bias: true }, // 3-d
];

function bnOperands(c: BnCase, gen: Generator) {
  const ch = c.shape[1]!;
  const x = channelData(c.shape, gen, c.offset);
  const w = randn([ch], { generator: gen });
  const b = randn([ch], { generator: gen });
  const rm = randn([ch], { generator: gen, mean: c.offset });
  const rv = tensor(
    Array.from({ length: ch }, (_, i) => 0.5 + i),
    [ch],
  );
  return { x, w, b, rm, rv };
}

function bnInputs(c: BnCase, o: ReturnType<typeof bnOperands>, training: boolean): [Tensor[], BatchNormAttrs] {
  const inputs = [o.x];
  if (c.weight) inputs.push(o.w);
  if (c.bias) inputs.push(o.b);
  if (!training) inputs.push(o.rm, o.rv);
  return [inputs, { training, eps: 1e-5, hasWeight: c.weight, hasBias: c.bias }];
}

/** A backward call's operands: the forward run on `forwardOn` fills `saved`, then the output gradient is drawn. */
function bnBackwardOperands(c: BnCase, seed: number, training: boolean, forwardOn: 'cpu' | 'wasm') {
  const gen = new Generator(seed);
  const o = bnOperands(c, gen);
  const [inputs, attrs] = bnInputs(c, o, training);
  const saved: Saved = {};
  on<BatchNormKernel>('BatchNormalization', forwardOn)(inputs, attrs, saved);
  const gy = randn(c.shape, { generator: gen });
  return { o, attrs, saved, gy };
}

/**
 * The wasm kernel computes y = (x − μ)·k + b in f32 where the cpu kernel rounds an f64 result once:
 * allow three roundings of the terms' magnitudes.
 */
function expectAffineClose(actual: Float32Array, expected: Float32Array, termScale: (i: number) => number): void {
  let worst = 0;
  for (let i = 0; i < expected.length; i++) {
    worst = Math.max(worst, Math.abs(actual[i]! - expected[i]!) / (3 * EPS32 * termScale(i) + 1e-30));
  }
  expect(worst).toBeLessThanOrEqual(1);
}

describe('wasm BatchNormalization', () => {
  it('has the wasm backend loaded', () => {
    expect(wasmStatus()).toMatchObject({ loaded: true });
  });

  for (const c of BN_CASES) {
    for (const training of [true, false]) {
      it(`forward ${training ? 'training' : 'eval'} ${c.shape.join('×')} (weight ${c.weight}, bias ${c.bias}) matches the cpu kernel`, () => {
        const gen = new Generator(7);
        const o = bnOperands(c, gen);
        const [inputs, attrs] = bnInputs(c, o, training);
        expect(kernels.resolve('BatchNormalization', inputs, attrs).backend).toBe('wasm');
        const sw: Saved = {};
        const sc: Saved = {};
        const w = on<BatchNormKernel>('BatchNormalization', 'wasm')(inputs, attrs, sw);
        const e = on<BatchNormKernel>('BatchNormalization', 'cpu')(inputs, attrs, sc);
        expect(w.length).toBe(training ? 3 : 1);
        expect(w[0]!.shape).toEqual(c.shape);
        if (training) {
          expect(maxRel(vals(w[1]), vals(e[1]))).toBeLessThanOrEqual(1e-6);
          expect(maxRel(vals(w[2]), vals(e[2]))).toBeLessThanOrEqual(1e-6);
        }
        expect(maxRel(sw.mean as Float32Array, sc.mean as Float32Array)).toBeLessThanOrEqual(1e-6);
        expect(maxRel(sw.invstd as Float32Array, sc.invstd as Float32Array)).toBeLessThanOrEqual(1e-6);
        const ch = c.shape[1]!;
        const s = o.x.size / (c.shape[0]! * ch);
        const mean = sc.mean as Float32Array;
        const invstd = sc.invstd as Float32Array;
        const xv = vals(o.x);
        expectAffineClose(vals(w[0]), vals(e[0]), (i) => {
          const k = Math.floor(i / s) % ch;
          const scale = (c.weight ? Math.abs(vals(o.w)[k]!) : 1) * invstd[k]!;
          return Math.abs(xv[i]! - mean[k]!) * scale + (c.bias ? Math.abs(vals(o.b)[k]!) : 0);
        });
      });
    }
  }

  it('normalises to the biased batch statistics, checked against direct loops', () => {
    const gen = new Generator(9);
    const x = channelData([32, 4, 6, 6], gen, 2);
    const [y, mean, variance] = on<BatchNormKernel>('BatchNormalization', 'wasm')(
      [x],
      { training: true, eps: 1e-5, hasWeight: false, hasBias: false },
      {},
    );
    const xv = vals(x);
    for (let c = 0; c < 4; c++) {
      let s = 0;
      let q = 0;
      const at: number[] = [];
      for (let n = 0; n < 32; n++) for (let i = 0; i < 36; i++) at.push((n * 4 + c) * 36 + i);
      for (const i of at) s += xv[i]!;
      const mu = s / at.length;
      for (const i of at) q += (xv[i]! - mu) ** 2;
      const v = q / at.length;
      expect(vals(mean)[c]).toBeCloseTo(mu, 5);
      expect(vals(variance)[c]! / v).toBeCloseTo(1, 6);
      for (const i of at.slice(0, 50)) expect(vals(y)[i]).toBeCloseTo((xv[i]! - mu) / Math.sqrt(v + 1e-5), 5);
    }
  });

  for (const c of BN_CASES) {
    for (const training of [true, false]) {
      it(`backward ${training ? 'training' : 'eval'} ${c.shape.join('×')} matches the cpu kernel`, () => {
        const { o, attrs, saved, gy } = bnBackwardOperands(c, 11, training, 'cpu');
        const args = c.weight ? [o.x, gy, o.w] : [o.x, gy];
        const ba: BatchNormBackwardAttrs = { ...attrs, needInput: true, needWeight: c.weight, needBias: c.bias };
        expect(kernels.resolve('BatchNormalizationBackward', args, ba).backend).toBe('wasm');
        const [dx, dw, db] = on<BatchNormBackwardKernel>('BatchNormalizationBackward', 'wasm')(args, ba, saved);
        const [ex, ew, eb] = on<BatchNormBackwardKernel>('BatchNormalizationBackward', 'cpu')(args, ba, saved);
        expect(dx!.shape).toEqual(c.shape);
        if (c.weight) expect(maxRel(vals(dw), vals(ew))).toBeLessThanOrEqual(1e-6);
        else expect(dw).toBeNull();
        if (c.bias) expect(maxRel(vals(db), vals(eb))).toBeLessThanOrEqual(1e-6);
        else expect(db).toBeNull();
        // dx = w·σ⁻¹·((g − mean g) − (x − μ)·k), each term rounded in f32.
        const ch = c.shape[1]!;
        const s = o.x.size / (c.shape[0]! * ch);
        const mean = saved.mean as Float32Array;
        const invstd = saved.invstd as Float32Array;
        const xv = vals(o.x);
        const gv = vals(gy);
        const sums = new Float64Array(2 * ch);
        for (let i = 0; i < xv.length; i++) {
          const k = Math.floor(i / s) % ch;
          sums[k] = sums[k]! + gv[i]!;
          sums[ch + k] = sums[ch + k]! + gv[i]! * (xv[i]! - mean[k]!);
        }
        const m = o.x.size / ch;
        expectAffineClose(vals(dx), vals(ex), (i) => {
          const k = Math.floor(i / s) % ch;
          const scale = (c.weight ? Math.abs(vals(o.w)[k]!) : 1) * invstd[k]!;
          if (!training) return scale * Math.abs(gv[i]!);
          const kk = Math.abs(sums[ch + k]! * invstd[k]! * invstd[k]!) / m;
          return 2 * scale * (Math.abs(gv[i]!) + Math.abs(sums[k]!) / m + Math.abs(xv[i]! - mean[k]!) * kk);
        });
      });
    }
  }

  it('backward skips the input gradient when it is not needed', () => {
    const c = BN_CASES[0]!;
    const { o, attrs, saved, gy } = bnBackwardOperands(c, 12, true, 'wasm');
    const ba: BatchNormBackwardAttrs = { ...attrs, needInput: false, needWeight: true, needBias: true };
    const [dx, dw, db] = on<BatchNormBackwardKernel>('BatchNormalizationBackward', 'wasm')([o.x, gy, o.w], ba, saved);
    const [, ew, eb] = on<BatchNormBackwardKernel>('BatchNormalizationBackward', 'cpu')([o.x, gy, o.w], ba, saved);
    expect(dx).toBeNull();
    expect(maxRel(vals(dw), vals(ew))).toBeLessThanOrEqual(1e-6);
    expect(maxRel(vals(db), vals(eb))).toBeLessThanOrEqual(1e-6);
  });

  it('batchNorm() trains through the wasm kernels with the gradients and running statistics of the cpu path', () => {
    const gen = new Generator(13);
    const shape = [32, 8, 6, 6];
    const x0 = channelData(shape, gen, 1.5);
    const w0 = randn([8], { generator: gen });
    const b0 = randn([8], { generator: gen });
    const gy = randn(shape, { generator: gen });
    const run = () => {
      const x = x0.clone().requiresGrad_();
      const w = w0.clone().requiresGrad_();
      const b = b0.clone().requiresGrad_();
      const rm = tensor(new Array(8).fill(0), [8]);
      const rv = tensor(new Array(8).fill(1), [8]);
      const y = batchNorm(x, rm, rv, w, b, { training: true, momentum: 0.3 });
      sum(y.mul(gy)).backward();
      return { y: vals(y), dx: vals(x.grad), dw: vals(w.grad), db: vals(b.grad), rm: vals(rm), rv: vals(rv) };
    };
    const fwd = vi.spyOn(kernels.kernelOn<BatchNormKernel>('BatchNormalization', 'wasm')!, 'fn');
    const bwd = vi.spyOn(kernels.kernelOn<BatchNormBackwardKernel>('BatchNormalizationBackward', 'wasm')!, 'fn');
    const wasm = run();
    expect(fwd).toHaveBeenCalledTimes(1);
    expect(bwd).toHaveBeenCalledTimes(1);
    fwd.mockRestore();
    bwd.mockRestore();
    kernels.setBackendEnabled('wasm', false);
    let cpu: ReturnType<typeof run>;
    try {
      cpu = run();
    } finally {
      kernels.setBackendEnabled('wasm', true);
    }
    for (const k of ['dw', 'db', 'rm', 'rv'] as const) expect(maxRel(wasm[k], cpu[k])).toBeLessThanOrEqual(1e-6);
    for (const k of ['y', 'dx'] as const) {
      let d = 0;
      let m = 0;
      for (let i = 0; i < cpu[k].length; i++) {
        d = Math.max(d, Math.abs(wasm[k][i]! - cpu[k][i]!));
        m = Math.max(m, Math.abs(cpu[k][i]!));
      }
      expect(d / m).toBeLessThan(1e-6);
    }
  });
});

describe('wasm Relu, ReluBackward and Add', () => {
  /** Random values with NaN, ±∞, ±0 and tiny numbers sprinkled in; `len` not a multiple of 4. */
  function special(len: number, gen: Generator): Float32Array {
    const v = vals(randn([len], { generator: gen }));
    const odd = [NaN, Infinity, -Infinity, 0, -0, 1e-40, -1e-40, 3.4e38, -3.4e38];
    for (let i = 0; i < odd.length; i++) v[i * 101 + 7] = odd[i]!;
    return v;
  }

  it('relu is bit-identical to the cpu kernel (NaN, ±0, ±∞ included)', () => {
    const gen = new Generator(21);
    for (const len of [ELEMENTWISE_MIN_ELEMENTS, 70001, 300003]) {
      const x = tensor(special(len, gen), [len]);
      expect(kernels.resolve('Relu', [x], {}).backend).toBe('wasm');
      const w = on<TensorKernel>('Relu', 'wasm')([x], {}, {}) as Tensor;
      const e = on<TensorKernel>('Relu', 'cpu')([x], {}, {}) as Tensor;
      expect(w.dtype).toBe('float32');
      expect(bits(vals(w))).toEqual(bits(vals(e)));
    }
  });

  it('relu gradient is bit-identical to the cpu kernel (NaN and ∞ gradients where y = 0 stay NaN, as g·0)', () => {
    const gen = new Generator(22);
    for (const len of [ELEMENTWISE_MIN_ELEMENTS + 3, 200001]) {
      const y = on<TensorKernel>('Relu', 'cpu')([tensor(special(len, gen), [len])], {}, {}) as Tensor;
      const g = tensor(special(len, gen).reverse(), [len]);
      expect(kernels.resolve('ReluBackward', [y, g], {}).backend).toBe('wasm');
      const w = on<ReluBackwardKernel>('ReluBackward', 'wasm')([y, g], {});
      const e = on<ReluBackwardKernel>('ReluBackward', 'cpu')([y, g], {});
      expect(bits(vals(w))).toEqual(bits(vals(e)));
    }
  });

  it('same-shape add is bit-identical to the cpu kernel', () => {
    const gen = new Generator(23);
    for (const shape of [
      [64, 64, 1],
      [3, 7, 13, 17],
      [10, 30001],
    ]) {
      const n = shape.reduce((a, b) => a * b, 1);
      const a = tensor(special(n, gen), shape);
      const b = tensor(special(n, gen).reverse(), shape);
      expect(kernels.resolve('Add', [a, b], {}).backend).toBe('wasm');
      const w = on<TensorKernel>('Add', 'wasm')([a, b], {}, {}) as Tensor;
      const e = on<TensorKernel>('Add', 'cpu')([a, b], {}, {}) as Tensor;
      expect(w.shape).toEqual(shape);
      expect(bits(vals(w))).toEqual(bits(vals(e)));
    }
  });

  it('relu and add train through the wasm kernels with the cpu gradients', () => {
    const gen = new Generator(24);
    const a0 = randn([16, 8, 8, 8], { generator: gen });
    const b0 = randn([16, 8, 8, 8], { generator: gen });
    const run = () => {
      const a = a0.clone().requiresGrad_();
      const b = b0.clone().requiresGrad_();
      // a feeds two branches, so its gradient is accumulated with Add.
      const y = add(relu(add(a, b)), relu(a));
      sum(y.mul(y)).backward();
      return [vals(y), vals(a.grad), vals(b.grad)].map(bits);
    };
    const spy = vi.spyOn(kernels.kernelOn<ReluBackwardKernel>('ReluBackward', 'wasm')!, 'fn');
    const wasm = run();
    expect(spy).toHaveBeenCalledTimes(2);
    spy.mockRestore();
    kernels.setBackendEnabled('wasm', false);
    try {
      expect(wasm).toEqual(run());
    } finally {
      kernels.setBackendEnabled('wasm', true);
    }
  });
});

describe('cpu fallback', () => {
  it('small, non-contiguous, broadcast and non-float32 operands go to the cpu kernels', () => {
    const gen = new Generator(31);
    const small = randn([2, 4, 8, 8], { generator: gen }); // 512 elements
    const mid = randn([4, 4, 8, 8], { generator: gen }); // 1024: enough for relu, not for batch norm
    expect(mid.size).toBe(ELEMENTWISE_MIN_ELEMENTS);
    expect(mid.size).toBeLessThan(BATCH_NORM_MIN_ELEMENTS);
    expect(kernels.resolve('Relu', [mid], {}).backend).toBe('wasm');
    expect(
      kernels.resolve('BatchNormalization', [mid], { training: true, eps: 1e-5, hasWeight: false, hasBias: false })
        .backend,
    ).toBe('cpu');
    const big = randn([64, 8, 16], { generator: gen });
    const view = big.transpose(1, 2);
    expect(kernels.resolve('Relu', [small], {}).backend).toBe('cpu');
    expect(kernels.resolve('Relu', [big], {}).backend).toBe('wasm');
    expect(kernels.resolve('Relu', [view], {}).backend).toBe('cpu');
    expect(kernels.resolve('Relu', [big.toType('int32')], {}).backend).toBe('cpu');
    expect(kernels.resolve('Add', [big, randn([16], { generator: gen })], {}).backend).toBe('cpu');
    expect(kernels.resolve('Add', [big, view.contiguous().transpose(1, 2)], {}).backend).toBe('cpu');
    expect(kernels.resolve('ReluBackward', [big, view], {}).backend).toBe('cpu');
    const attrs: BatchNormAttrs = { training: true, eps: 1e-5, hasWeight: false, hasBias: false };
    expect(kernels.resolve('BatchNormalization', [small], attrs).backend).toBe('cpu');
    expect(kernels.resolve('BatchNormalization', [big], attrs).backend).toBe('wasm');
    expect(kernels.resolve('BatchNormalization', [view], attrs).backend).toBe('cpu');
    const ba: BatchNormBackwardAttrs = { ...attrs, needInput: true, needWeight: false, needBias: false };
    expect(kernels.resolve('BatchNormalizationBackward', [big, view], ba).backend).toBe('cpu');
    // Integer relu keeps its dtype on the cpu kernel; −∞ goes to 0 there as in wasm.
    expect(relu(tensor([-2, 3], [2], { dtype: 'int32' })).dtype).toBe('int32');
    expect(Array.from(vals(relu(tensor([-Infinity, Infinity, NaN, -0, -1, 2], [6]))))).toEqual([
      0,
      Infinity,
      NaN,
      0,
      0,
      2,
    ]);
  });

  it('an operand too large for wasm32 memory is turned down from its shape alone', () => {
    const huge = {
      shape: [1 << 16, 1 << 15],
      ndim: 2,
      size: 2 ** 31,
      dtype: 'float32',
      isContiguous: () => true,
    } as unknown as Tensor;
    expect(kernels.kernelOn('Relu', 'wasm')!.accepts!([huge], {})).toBe(false);
    expect(kernels.kernelOn('Add', 'wasm')!.accepts!([huge, huge], {})).toBe(false);
  });
});

describe('builds', () => {
  const shape = [32, 16, 16, 16];

  function everything(): number[][] {
    const gen = new Generator(41);
    const x = channelData(shape, gen, 0.7);
    const g = randn(shape, { generator: gen });
    const w = randn([16], { generator: gen });
    const b = randn([16], { generator: gen });
    const attrs: BatchNormAttrs = { training: true, eps: 1e-5, hasWeight: true, hasBias: true };
    const saved: Saved = {};
    const [y, m, v] = on<BatchNormKernel>('BatchNormalization', 'wasm')([x, w, b], attrs, saved);
    const grads = on<BatchNormBackwardKernel>('BatchNormalizationBackward', 'wasm')(
      [x, g, w],
      { ...attrs, needInput: true, needWeight: true, needBias: true },
      saved,
    );
    const r = on<TensorKernel>('Relu', 'wasm')([x], {}, {}) as Tensor;
    const rb = on<ReluBackwardKernel>('ReluBackward', 'wasm')([r, g], {});
    const s = on<TensorKernel>('Add', 'wasm')([x, g], {}, {}) as Tensor;
    return [y, m, v, ...grads, r, rb, s].map((t) => bits(vals(t)));
  }

  it('wasm/gemm.wasm (what browsers load from bytes) gives the same results as the shared-memory build', () => {
    const expected = everything();
    const bytes = readFileSync(fileURLToPath(new URL('../../wasm/gemm.wasm', import.meta.url)));
    try {
      expect(loadWasmBackend(bytes)).toMatchObject({ loaded: true, source: 'bytes', threads: 1 });
      expect(everything()).toEqual(expected);
    } finally {
      loadWasmBackend();
    }
  });
});
