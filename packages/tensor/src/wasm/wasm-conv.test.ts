import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { conv2d, Generator, randn, type Tensor } from '../index.js';
import type { ConvAttrs, ConvBackwardAttrs, ConvBackwardKernel } from '../ops/conv.js';
import { kernels, type TensorKernel } from '../registry.js';
import { COLS_BUDGET } from './wasm-conv.js';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { loadWasmBackend, setWasmThreads, wasmStatus } from './wasm-backend.js';

type ConvKernel = TensorKernel<ConvAttrs>;
const onWasm = kernels.kernelOn<ConvKernel>('Conv', 'wasm')!;
const onCpu = kernels.kernelOn<ConvKernel>('Conv', 'cpu')!;
const bwdWasm = kernels.kernelOn<ConvBackwardKernel>('ConvBackward', 'wasm')!;
const bwdCpu = kernels.kernelOn<ConvBackwardKernel>('ConvBackward', 'cpu')!;

interface Case {
  x: number[];
  w: number[];
  stride: number[];
  pad: number[];
  dil: number[];
  groups: number;
  bias: boolean;
}

const attrsOf = (c: Case): ConvAttrs => ({
  stride: c.stride,
  pads: [...c.pad, ...c.pad],
  dilation: c.dil,
  groups: c.groups,
});

/** The cpu kernels with the TypeScript gemm under them, so nothing of the wasm path is shared. */
function onCpuOnly<T>(fn: () => T): T {
  kernels.setBackendEnabled('wasm', false);
  try {
    return fn();
  } finally {
    kernels.setBackendEnabled('wasm', true);
  }
}

/** Max abs difference relative to the largest reference magnitude. */
function relErr(actual: Tensor, expected: Tensor): number {
  expect(actual.shape).toEqual(expected.shape);
  const a = actual.values() as Float32Array;
  const e = expected.values() as Float32Array;
  let diff = 0;
  let scale = 0;
  for (let i = 0; i < e.length; i++) {
    diff = Math.max(diff, Math.abs(a[i]! - e[i]!));
    scale = Math.max(scale, Math.abs(e[i]!));
  }
  return diff / Math.max(scale, 1e-6);
}

function operands(c: Case, gen: Generator): Tensor[] {
  const x = randn(c.x, { generator: gen });
  const w = randn(c.w, { generator: gen });
  return c.bias ? [x, w, randn([c.w[0]!], { generator: gen })] : [x, w];
}

/** The gradient of the output for case c, shaped like the forward result. */
function outGrad(y: Tensor, gen: Generator): Tensor {
  return randn(y.shape, { generator: gen });
}

function backwardAttrs(c: Case, needInput = true, needWeight = true): ConvBackwardAttrs {
  return { ...attrsOf(c), needInput, needWeight, needBias: c.bias };
}

/** Random 2-d cases over the parameter grid, each checked to give an output of at least 1×1. */
function randomCases(count: number, seed: number): Case[] {
  const gen = new Generator(seed);
  const pick = <T>(xs: readonly T[]): T => xs[gen.nextUint32() % xs.length]!;
  const out: Case[] = [];
  while (out.length < count) {
    const k = pick([1, 3, 5]);
    const stride = pick([1, 2]);
    const pad = pick([0, 1]);
    const dil = k === 1 ? 1 : pick([1, 1, 2]);
    const h = 4 + (gen.nextUint32() % 9);
    const w = 4 + (gen.nextUint32() % 9);
    if (dil * (k - 1) + 1 > Math.min(h, w) + 2 * pad) continue;
    const cin = 1 + (gen.nextUint32() % 8);
    const cout = 1 + (gen.nextUint32() % 9);
    out.push({
      x: [pick([1, 5]), cin, h, w],
      w: [cout, cin, k, k],
      stride: [stride, stride],
      pad: [pad, pad],
      dil: [dil, dil],
      groups: 1,
      bias: gen.nextUint32() % 2 === 0,
    });
  }
  return out;
}

const special: [string, Case][] = [
  [
    '1×1 stride 1 unpadded (input used as its columns)',
    { x: [5, 6, 7, 9], w: [4, 6, 1, 1], stride: [1, 1], pad: [0, 0], dil: [1, 1], groups: 1, bias: true },
  ],
  [
    '1×1 stride 2',
    { x: [5, 3, 7, 8], w: [5, 3, 1, 1], stride: [2, 2], pad: [0, 0], dil: [1, 1], groups: 1, bias: false },
  ],
  [
    'mixed stride, padding and dilation per dim',
    { x: [2, 3, 9, 11], w: [4, 3, 3, 5], stride: [1, 2], pad: [1, 0], dil: [2, 1], groups: 1, bias: true },
  ],
  ['groups 2', { x: [3, 4, 6, 6], w: [6, 2, 3, 3], stride: [1, 1], pad: [1, 1], dil: [1, 1], groups: 2, bias: true }],
  ['depthwise', { x: [2, 3, 5, 7], w: [3, 1, 3, 3], stride: [2, 2], pad: [1, 1], dil: [1, 1], groups: 3, bias: false }],
  ['1-d', { x: [3, 4, 20], w: [5, 4, 3], stride: [2], pad: [1], dil: [2], groups: 1, bias: true }],
  [
    '3-d',
    {
      x: [2, 2, 4, 5, 6],
      w: [3, 2, 2, 3, 3],
      stride: [1, 2, 1],
      pad: [1, 0, 1],
      dil: [1, 1, 2],
      groups: 1,
      bias: true,
    },
  ],
  [
    'empty batch',
    { x: [0, 3, 5, 5], w: [2, 3, 3, 3], stride: [1, 1], pad: [1, 1], dil: [1, 1], groups: 1, bias: true },
  ],
  // 8·25 column rows × 64 output columns per row: bands of COLS_BUDGET / 12800 = 10 rows.
  [
    'output rows in several column bands',
    { x: [2, 8, 66, 66], w: [3, 8, 5, 5], stride: [1, 1], pad: [1, 1], dil: [1, 1], groups: 1, bias: true },
  ],
];

function checkCase(c: Case, seed: number): void {
  const gen = new Generator(seed);
  const inputs = operands(c, gen);
  const attrs = attrsOf(c);
  const y = onWasm.fn(inputs, attrs, {}) as Tensor;
  const yRef = onCpuOnly(() => onCpu.fn(inputs, attrs, {}) as Tensor);
  expect(relErr(y, yRef)).toBeLessThan(1e-5);

  const gy = outGrad(yRef, gen);
  const bIn = [inputs[0]!, inputs[1]!, gy];
  const ba = backwardAttrs(c);
  const got = bwdWasm.fn(bIn, ba, {});
  const want = onCpuOnly(() => bwdCpu.fn(bIn, ba, {}));
  for (let i = 0; i < 3; i++) {
    if (i === 2 && !c.bias) {
      expect(got[2]).toBeNull();
      continue;
    }
    expect(relErr(got[i]!, want[i]!)).toBeLessThan(1e-5);
  }
}

afterEach(() => {
  kernels.setBackendEnabled('wasm', true);
});

describe('wasm Conv against the cpu kernels', () => {
  it('serves Conv and ConvBackward ahead of cpu', () => {
    expect(wasmStatus().loaded).toBe(true);
    const x = randn([1, 2, 5, 5]);
    const w = randn([3, 2, 3, 3]);
    const a: ConvAttrs = { stride: [1, 1], pads: [1, 1, 1, 1], dilation: [1, 1], groups: 1 };
    expect(kernels.resolve('Conv', [x, w], a).backend).toBe('wasm');
    expect(
      kernels.resolve('ConvBackward', [x, w, randn([1, 3, 5, 5])], {
        ...a,
        needInput: true,
        needWeight: true,
        needBias: false,
      }).backend,
    ).toBe('wasm');
  });

  it('random 2-d shapes: kernels 1/3/5, stride 1/2, padding 0/1, dilation 2, batch 1 and 5, cin 1..8', () => {
    const cases = randomCases(40, 7);
    expect(new Set(cases.map((c) => c.w[2])).size).toBe(3);
    expect(cases.some((c) => c.dil[0] === 2) && cases.some((c) => c.stride[0] === 2)).toBe(true);
    cases.forEach((c, i) => {
      checkCase(c, 100 + i);
    });
  });

  for (const [name, c] of special) {
    it(name, () => {
      if (name.includes('bands')) expect(8 * 25 * 64 * 64).toBeGreaterThan(COLS_BUDGET);
      checkCase(c, name.length);
    });
  }

  it('computes only the gradients asked for', () => {
    const c = special[2]![1];
    const gen = new Generator(3);
    const [x, w] = operands({ ...c, bias: false }, gen);
    const y = onWasm.fn([x!, w!], attrsOf(c), {}) as Tensor;
    const gy = outGrad(y, gen);
    const full = onCpuOnly(() => bwdCpu.fn([x!, w!, gy], backwardAttrs({ ...c, bias: false }), {}));
    const dxOnly = bwdWasm.fn([x!, w!, gy], { ...backwardAttrs({ ...c, bias: false }, true, false) }, {});
    const dwOnly = bwdWasm.fn([x!, w!, gy], { ...backwardAttrs({ ...c, bias: false }, false, true) }, {});
    expect(dxOnly[1]).toBeNull();
    expect(dwOnly[0]).toBeNull();
    expect(relErr(dxOnly[0]!, full[0]!)).toBeLessThan(1e-5);
    expect(relErr(dwOnly[1]!, full[1]!)).toBeLessThan(1e-5);
  });
});

describe('single-thread build', () => {
  it.each(['gemm.wasm', 'gemm-relaxed.wasm'])(
    'wasm/%s (what browsers load from bytes) runs the same conv kernels',
    (file) => {
      const bytes = readFileSync(fileURLToPath(new URL(`../../wasm/${file}`, import.meta.url)));
      try {
        expect(loadWasmBackend(bytes)).toMatchObject({ loaded: true, source: 'bytes', threads: 1 });
        checkCase(special[2]![1], 5);
        checkCase(
          { x: [3, 3, 9, 9], w: [4, 3, 3, 3], stride: [2, 2], pad: [1, 1], dil: [1, 1], groups: 1, bias: true },
          6,
        );
      } finally {
        loadWasmBackend();
      }
      expect(wasmStatus().source).toMatch(/gemm-shared(-relaxed)?\.wasm$/);
    },
  );
});

describe('dispatch', () => {
  it('conv2d forward and backward go through the wasm kernels', () => {
    const fwd = vi.spyOn(onWasm, 'fn');
    const bwd = vi.spyOn(bwdWasm, 'fn');
    const x = randn([2, 3, 6, 6], { requiresGrad: true });
    const w = randn([4, 3, 3, 3], { requiresGrad: true });
    conv2d(x, w, null, { padding: 1 }).sum().backward();
    expect(fwd).toHaveBeenCalledTimes(1);
    expect(bwd).toHaveBeenCalledTimes(1);
    fwd.mockRestore();
    bwd.mockRestore();
    expect(x.grad!.shape).toEqual([2, 3, 6, 6]);
  });

  it('falls back to cpu when the wasm backend is off, and when a problem would not fit in wasm32 memory', () => {
    const a: ConvAttrs = { stride: [1, 1], pads: [1, 1, 1, 1], dilation: [1, 1], groups: 1 };
    kernels.setBackendEnabled('wasm', false);
    expect(kernels.resolve('Conv', [randn([1, 1, 3, 3]), randn([1, 1, 3, 3])], a).backend).toBe('cpu');
    kernels.setBackendEnabled('wasm', true);
    // 2^31 input floats: staged alone it is 8 GiB. Only shapes are read to decide.
    const huge = { shape: [512, 64, 256, 256], ndim: 4 } as unknown as Tensor;
    const w = { shape: [64, 64, 3, 3], ndim: 4 } as unknown as Tensor;
    expect(onWasm.accepts!([huge, w], a)).toBe(false);
    expect(kernels.resolve('Conv', [huge, w], a).backend).toBe('cpu');
    expect(
      kernels.resolve('ConvBackward', [huge, w, huge], { ...a, needInput: true, needWeight: true, needBias: false })
        .backend,
    ).toBe('cpu');
  });
});

describe('two threads', () => {
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  // 16 images of 8×16×16, 3×3 to 16 channels: 2·16·16·256·72 ≈ 9.4 MFLOP, enough to share.
  const c: Case = {
    x: [16, 8, 16, 16],
    w: [16, 8, 3, 3],
    stride: [1, 1],
    pad: [1, 1],
    dil: [1, 1],
    groups: 1,
    bias: true,
  };

  beforeAll(async () => {
    setWasmThreads(true);
    const gen = new Generator(1);
    const inputs = operands(c, gen);
    onWasm.fn(inputs, attrsOf(c), {}); // starts the worker
    for (let i = 0; i < 250 && wasmStatus().threads !== 2; i++) await sleep(20);
  });

  afterAll(() => {
    setWasmThreads(true);
  });

  it('gives bit-identical forward and backward results on one and on two threads, and the worker takes chunks', () => {
    expect(wasmStatus()).toMatchObject({ threads: 2 });
    const gen = new Generator(2);
    const inputs = operands(c, gen);
    const attrs = attrsOf(c);
    const gy = randn([16, 16, 16, 16], { generator: gen });
    const ba = backwardAttrs(c);
    const run = () => {
      const y = onWasm.fn(inputs, attrs, {}) as Tensor;
      const g = bwdWasm.fn([inputs[0]!, inputs[1]!, gy], ba, {});
      return [y, ...g].map((t) => Array.from(t!.values() as Float32Array));
    };
    const before = wasmStatus().workerChunks!;
    let two = run();
    for (let i = 0; i < 40 && wasmStatus().workerChunks === before; i++) two = run();
    expect(wasmStatus().workerChunks).toBeGreaterThan(before);

    setWasmThreads(false);
    const off = wasmStatus().workerChunks;
    const one = run();
    expect(wasmStatus().workerChunks).toBe(off);
    setWasmThreads(true);
    for (let t = 0; t < 4; t++) expect(two[t]).toEqual(one[t]);
  });
});
