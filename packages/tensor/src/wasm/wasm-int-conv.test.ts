import { afterAll, describe, expect, it } from 'vitest';
import { conv2d, convInteger, Generator, Tensor, type DType } from '../index.js';
import type { ConvAttrs } from '../ops/conv.js';
import { kernels, type TensorKernel } from '../registry.js';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { loadWasmBackend, setWasmThreads, wasmStatus } from './wasm-backend.js';

type Kernel = TensorKernel<ConvAttrs>;
const onWasm = kernels.kernelOn<Kernel>('ConvInteger', 'wasm')!;
const onCpu = kernels.kernelOn<Kernel>('ConvInteger', 'cpu')!;

function ints(shape: number[], dtype: DType, lo: number, hi: number, gen: Generator): Tensor {
  const n = shape.reduce((a, b) => a * b, 1);
  const data = dtype === 'int8' ? new Int8Array(n) : new Int16Array(n);
  for (let i = 0; i < n; i++) data[i] = lo + (gen.nextUint32() % (hi - lo + 1));
  return new Tensor({ data, shape, dtype });
}

interface Case {
  x: number[];
  w: number[];
  stride: number[];
  pads: number[];
  dil: number[];
  groups: number;
  xDtype: DType;
  wDtype: DType;
}

/** A 2-d int8-weight case with the same stride and padding in both dims, no dilation, one group. */
const square2d = (x: number[], w: number[], stride: number, pad: number, xDtype: Case['xDtype']): Case => ({
  x,
  w,
  stride: [stride, stride],
  pads: [pad, pad, pad, pad],
  dil: [1, 1],
  groups: 1,
  xDtype,
  wDtype: 'int8',
});

const attrsOf = (c: Case): ConvAttrs => ({ stride: c.stride, pads: c.pads, dilation: c.dil, groups: c.groups });

function operands(c: Case, gen: Generator): [Tensor, Tensor] {
  const x = c.xDtype === 'int8' ? ints(c.x, 'int8', -128, 127, gen) : ints(c.x, 'int16', -32768, 32767, gen);
  const w = c.wDtype === 'int8' ? ints(c.w, 'int8', -128, 127, gen) : ints(c.w, 'int16', -32768, 32767, gen);
  return [x, w];
}

function randomCases(count: number, seed: number): Case[] {
  const gen = new Generator(seed);
  const pick = <T>(xs: readonly T[]): T => xs[gen.nextUint32() % xs.length]!;
  const out: Case[] = [];
  while (out.length < count) {
    const k = pick([1, 2, 3, 5]);
    const stride = pick([1, 2, 3]);
    const pad = pick([0, 1, 2]);
    const dil = k === 1 ? 1 : pick([1, 1, 2]);
    const h = 3 + (gen.nextUint32() % 14);
    const wd = 3 + (gen.nextUint32() % 14);
    if (dil * (k - 1) + 1 > Math.min(h, wd) + 2 * pad) continue;
    const groups = pick([1, 1, 2, 3]);
    const cin = groups * (1 + (gen.nextUint32() % 5));
    const cout = groups * (1 + (gen.nextUint32() % 7));
    out.push({
      x: [1 + (gen.nextUint32() % 3), cin, h, wd],
      w: [cout, cin / groups, k, k],
      stride: [stride, pick([1, 2])],
      pads: [pad, pick([0, 1]), pick([0, pad]), pad],
      dil: [dil, dil],
      groups,
      xDtype: pick(['int8', 'int16'] as DType[]),
      wDtype: pick(['int8', 'int8', 'int16'] as DType[]),
    });
  }
  return out;
}

const sameBits = (a: Tensor, b: Tensor) => {
  expect(a.dtype).toBe('int32');
  expect(a.shape).toEqual(b.shape);
  expect(Array.from(a.values())).toEqual(Array.from(b.values()));
};

afterAll(() => setWasmThreads(true));

describe('ConvInteger', () => {
  it('the wasm backend is loaded', () => {
    expect(wasmStatus().loaded).toBe(true);
  });

  it('cpu kernel: exact integer sums, equal to the float conv where float32 is exact', () => {
    const gen = new Generator(3);
    const x = ints([2, 3, 7, 6], 'int8', -128, 127, gen);
    const w = ints([4, 3, 3, 3], 'int8', -128, 127, gen);
    const y = convInteger(x, w, { pads: 1, stride: [2, 1] });
    const f = (t: Tensor) => new Tensor({ data: Float32Array.from(t.values()), shape: t.shape, dtype: 'float32' });
    const ref = conv2d(f(x), f(w), null, { padding: 1, stride: [2, 1] });
    expect(y.shape).toEqual(ref.shape);
    expect(Array.from(y.values())).toEqual(Array.from(ref.values()));
  });

  it('cpu kernel wraps modulo 2^32 (hand-computed)', () => {
    // 1×1 conv over 3 channels: 3 · 32767 · 32767 = 3221028867 → 3221028867 − 2^32 = −1073938429.
    const x = new Tensor({ data: new Int16Array([32767, 32767, 32767]), shape: [1, 3, 1, 1], dtype: 'int16' });
    const w = new Tensor({ data: new Int16Array([32767, 32767, 32767]), shape: [1, 3, 1, 1], dtype: 'int16' });
    expect(
      Array.from(
        onCpu
          .fn([x, w], { stride: [1, 1], pads: [0, 0, 0, 0], dilation: [1, 1], groups: 1 }, {})
          .values() as Int32Array,
      ),
    ).toEqual([-1073938429]);
    expect(Array.from(convInteger(x, w).values())).toEqual([-1073938429]);
  });

  for (const threads of [false, true]) {
    it(`wasm matches cpu bit for bit on random 2-d cases, wrapping included (threads ${threads})`, () => {
      setWasmThreads(threads);
      const gen = new Generator(threads ? 11 : 7);
      for (const c of randomCases(40, threads ? 5 : 4)) {
        const [x, w] = operands(c, gen);
        sameBits(onWasm.fn([x, w], attrsOf(c), {}) as Tensor, onCpu.fn([x, w], attrsOf(c), {}) as Tensor);
      }
    });
  }

  it('wasm matches cpu on 1-d and 3-d convs, and on batches the worker thread shares', async () => {
    const gen = new Generator(21);
    // The worker starts on the first job big enough to share; give it time to come up.
    const big = ints([40, 16, 28, 28], 'int8', -128, 127, gen);
    const bw = ints([16, 16, 3, 3], 'int8', -128, 127, gen);
    convInteger(big, bw, { pads: 1 });
    await new Promise((resolve) => setTimeout(resolve, 200));
    const before = wasmStatus().workerChunks ?? 0;
    const cases: Case[] = [
      { x: [3, 4, 37], w: [5, 4, 3], stride: [2], pads: [1, 2], dil: [2], groups: 1, xDtype: 'int16', wDtype: 'int8' },
      {
        x: [2, 4, 5, 6, 7],
        w: [6, 2, 2, 3, 3],
        stride: [1, 2, 1],
        pads: [1, 0, 1, 1, 1, 0],
        dil: [1, 1, 2],
        groups: 2,
        xDtype: 'int8',
        wDtype: 'int8',
      },
      square2d([40, 16, 28, 28], [16, 16, 3, 3], 1, 1, 'int8'),
      square2d([40, 16, 28, 28], [32, 16, 3, 3], 2, 1, 'int16'),
      square2d([40, 32, 14, 14], [64, 32, 1, 1], 2, 0, 'int8'),
    ];
    for (const c of cases) {
      const [x, w] = operands(c, gen);
      sameBits(onWasm.fn([x, w], attrsOf(c), {}) as Tensor, onCpu.fn([x, w], attrsOf(c), {}) as Tensor);
    }
    if (wasmStatus().threads === 2) expect(wasmStatus().workerChunks).toBeGreaterThan(before);
  });

  it('the single-thread build (wasm/gemm.wasm, loaded from bytes) runs the same kernel', () => {
    const bytes = readFileSync(fileURLToPath(new URL('../../wasm/gemm.wasm', import.meta.url)));
    const gen = new Generator(31);
    try {
      expect(loadWasmBackend(bytes)).toMatchObject({ loaded: true, source: 'bytes', threads: 1 });
      for (const c of randomCases(8, 9)) {
        const [x, w] = operands(c, gen);
        sameBits(onWasm.fn([x, w], attrsOf(c), {}) as Tensor, onCpu.fn([x, w], attrsOf(c), {}) as Tensor);
      }
    } finally {
      loadWasmBackend();
    }
    expect(wasmStatus().source).toMatch(/gemm-shared(-relaxed)?\.wasm$/);
  });

  it('dispatches to wasm and validates its arguments', () => {
    const x = new Tensor({ data: new Int8Array(2 * 9), shape: [1, 2, 3, 3], dtype: 'int8' });
    const w = new Tensor({ data: new Int8Array(2 * 2 * 4), shape: [2, 2, 2, 2], dtype: 'int8' });
    expect(
      kernels.resolve('ConvInteger', [x, w], { stride: [1, 1], pads: [0, 0, 0, 0], dilation: [1, 1], groups: 1 })
        .backend,
    ).toBe('wasm');
    expect(convInteger(x, w).shape).toEqual([1, 2, 2, 2]);
    const f = new Tensor({ data: new Float32Array(18), shape: [1, 2, 3, 3], dtype: 'float32' });
    expect(() => convInteger(f, w)).toThrow(/int8 or int16/);
    expect(() => convInteger(x, w, { groups: 2 })).toThrow(/groups/);
  });
});
