import { afterEach, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Generator, maxPool2d, noGrad, randn, type Tensor } from '../index.js';
import { poolOutSize, type MaxPoolAttrs } from '../ops/pool.js';
import { kernels, type Saved } from '../registry.js';
import { loadWasmBackend, wasmStatus } from './wasm-backend.js';

type Kernel = (i: Tensor[], a: MaxPoolAttrs, s: Saved) => Tensor;
const onWasm = kernels.kernelOn<Kernel>('MaxPool', 'wasm')!;
const onCpu = kernels.kernelOn<Kernel>('MaxPool', 'cpu')!;

/** Equal values, NaN where NaN (zeros compared by value: the kernels may disagree on a zero's sign). */
function expectSame(a: Tensor, b: Tensor): void {
  expect(a.shape).toEqual(b.shape);
  const av = a.values();
  const bv = b.values();
  for (let i = 0; i < av.length; i++) {
    if (Number.isNaN(bv[i]!)) expect(Number.isNaN(av[i]!)).toBe(true);
    else if (av[i] !== bv[i]) expect([i, av[i]]).toEqual([i, bv[i]]);
  }
}

afterEach(() => {
  if (!wasmStatus().loaded) loadWasmBackend();
});

describe('wasm MaxPool (forward without argmax) against the cpu kernel', () => {
  it('random geometries: kernels 1–4, strides 1–3, padding, dilation, ceil mode, NaN and ±Infinity planes', () => {
    const gen = new Generator(21);
    const u = (n: number): number => gen.nextUint32() % n;
    let checked = 0;
    for (let t = 0; t < 60; t++) {
      const k = [1 + u(4), 1 + u(4)];
      const d = [1 + u(2), 1 + u(2)];
      const p = [u(Math.floor(k[0]! / 2) + 1), u(Math.floor(k[1]! / 2) + 1)];
      const s = [1 + u(3), 1 + u(3)];
      const h = d[0]! * (k[0]! - 1) + 1 + u(20);
      const w = d[1]! * (k[1]! - 1) + 1 + u(20);
      const planes = Math.ceil(4096 / (h * w)) + u(5);
      const ceilMode = u(2) === 1;
      const a: MaxPoolAttrs = { kernel: k, stride: s, padding: p, dilation: d, ceilMode };
      if (
        poolOutSize(h, k[0]!, s[0]!, p[0]!, d[0]!, ceilMode) < 1 ||
        poolOutSize(w, k[1]!, s[1]!, p[1]!, d[1]!, ceilMode) < 1
      )
        continue;
      const x = randn([planes, h, w], { generator: gen });
      const xv = x.values();
      if (t % 5 === 0) xv[u(xv.length)] = Number.NaN;
      if (t % 7 === 0) xv[u(xv.length)] = Infinity;
      if (t % 3 === 0) xv.fill(-Infinity, 0, h * w); // a plane of −Infinity
      expect(onWasm.accepts!([x], a)).toBe(true);
      expectSame(onWasm.fn([x], a, {}), onCpu.fn([x], a, {}));
      checked++;
    }
    expect(checked).toBeGreaterThan(40);
  });

  it('the ResNet stem shape (3×3, stride 2, padding 1) in evaluation goes to wasm; with a gradient to the cpu kernel', () => {
    const x = randn([2, 64, 112, 112], { generator: new Generator(3) });
    const a: MaxPoolAttrs = { kernel: [3, 3], stride: [2, 2], padding: [1, 1], dilation: [1, 1], ceilMode: false };
    expect(kernels.resolve('MaxPool', [x], a).backend).toBe('wasm');
    expectSame(
      noGrad(() => maxPool2d(x, 3, { stride: 2, padding: 1 })),
      onCpu.fn([x], a, {}),
    );
    const xg = x.clone();
    xg.requiresGrad = true;
    expect(kernels.resolve('MaxPool', [xg], a).backend).toBe('cpu');
    expect(noGrad(() => kernels.resolve('MaxPool', [xg], a).backend)).toBe('wasm');
    const y = maxPool2d(xg, 3, { stride: 2, padding: 1 });
    y.sum().backward();
    expect(Array.from(xg.grad!.values()).reduce((s, v) => s + Number(v), 0)).toBe(y.size);
  });

  it.each(['gemm.wasm', 'gemm-relaxed.wasm'])('the single-thread build wasm/%s runs it too', (file) => {
    const bytes = readFileSync(fileURLToPath(new URL(`../../wasm/${file}`, import.meta.url)));
    const x = randn([3, 8, 30, 30], { generator: new Generator(4) });
    const a: MaxPoolAttrs = { kernel: [2, 3], stride: [2, 1], padding: [1, 1], dilation: [1, 2], ceilMode: true };
    const expected = onCpu.fn([x], a, {});
    try {
      expect(loadWasmBackend(bytes)).toMatchObject({ loaded: true, source: 'bytes' });
      expectSame(onWasm.fn([x], a, {}), expected);
    } finally {
      loadWasmBackend();
    }
  });
});
