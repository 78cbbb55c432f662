import { afterEach, describe, expect, it, vi } from 'vitest';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { gemm, gemmArgs, type GemmKernel } from '../gemm/gemm.js';
import { kernels } from '../registry.js';
import * as qtk from '../index.js';
import { loadWasmBackend, wasmStatus } from './wasm-backend.js';
import { relaxedSimdSupport } from './wasm-features.js';
import { loadWasmSync } from './wasm-loader.js';

const wasmFile = fileURLToPath(new URL('../../wasm/gemm.wasm', import.meta.url));

function smallProblem() {
  // [[1,2,3],[4,5,6]] · [[1,0],[0,1],[1,1]] = [[4,5],[10,11]]
  return gemmArgs(
    false,
    false,
    2,
    2,
    3,
    new Float32Array([1, 2, 3, 4, 5, 6]),
    new Float32Array([1, 0, 0, 1, 1, 1]),
    new Float32Array(4),
  );
}

afterEach(() => {
  kernels.setBackendEnabled('wasm', true);
  if (!wasmStatus().loaded) loadWasmBackend();
});

describe('wasm backend registration', () => {
  it('importing the package index registers and loads the wasm backend ahead of cpu', () => {
    expect(qtk.wasmStatus()).toMatchObject({ loaded: true });
    expect(qtk.wasmStatus().source).toMatch(/wasm\/gemm(-shared)?(-relaxed)?\.wasm$/);
    expect(
      kernels
        .listBackends()
        .map((b) => b.name)
        .slice(0, 2),
    ).toEqual(['wasm', 'cpu']);
  });

  it('picks the relaxed-SIMD (fused multiply-add) build where the runtime compiles it; QTK_WASM_RELAXED=0 keeps the plain one', () => {
    // Node 20 compiles it once the V8 flag is set, Node 22 and current browsers by default.
    expect(relaxedSimdSupport({}).ok).toBe(true);
    expect(qtk.wasmStatus()).toMatchObject({ relaxedSimd: true });
    expect(qtk.wasmStatus().source).toMatch(/-relaxed\.wasm$/);
    expect(relaxedSimdSupport({ QTK_WASM_RELAXED: '0' })).toEqual({
      ok: false,
      reason: 'disabled by QTK_WASM_RELAXED=0',
    });
  });

  it('gemm() dispatches to the wasm kernel when it is loaded', () => {
    const g = smallProblem();
    expect(kernels.resolve<GemmKernel>('Gemm', g).backend).toBe('wasm');
    const spec = kernels.kernelOn<GemmKernel>('Gemm', 'wasm')!;
    const spy = vi.spyOn(spec, 'fn');
    gemm(g);
    expect(spy).toHaveBeenCalledTimes(1);
    spy.mockRestore();
    expect(Array.from(g.c)).toEqual([4, 5, 10, 11]);
  });

  it('setBackendEnabled("wasm", false) sends gemm() back to cpu, with the same result', () => {
    kernels.setBackendEnabled('wasm', false);
    const g = smallProblem();
    expect(kernels.resolve<GemmKernel>('Gemm', g).backend).toBe('cpu');
    gemm(g);
    expect(Array.from(g.c)).toEqual([4, 5, 10, 11]);
    kernels.setBackendEnabled('wasm', true);
    expect(kernels.resolve<GemmKernel>('Gemm', g).backend).toBe('wasm');
  });

  it('matmul forward and backward give the same numbers on wasm and cpu', () => {
    const run = () => {
      const a = qtk.tensor(
        Array.from({ length: 3 * 5 * 7 }, (_, i) => Math.sin(i)),
        [3, 5, 7],
        { requiresGrad: true },
      );
      const b = qtk.tensor(
        Array.from({ length: 7 * 6 }, (_, i) => Math.cos(i)),
        [7, 6],
        { requiresGrad: true },
      );
      const y = qtk.matmul(a, b);
      qtk.sum(qtk.mul(y, y)).backward();
      return [y.values(), a.grad!.values(), b.grad!.values()].map((v) => Array.from(v as Float32Array));
    };
    const onWasm = run();
    kernels.setBackendEnabled('wasm', false);
    const onCpu = run();
    for (let t = 0; t < 3; t++) {
      for (let i = 0; i < onCpu[t]!.length; i++) expect(onWasm[t]![i]).toBeCloseTo(onCpu[t]![i]!, 4);
    }
  });

  it('bad bytes leave the cpu kernel in use and wasmStatus() says why; good bytes load again', () => {
    const status = loadWasmBackend(new Uint8Array([0, 97, 115, 109, 9, 9, 9, 9]));
    expect(status.loaded).toBe(false);
    expect(wasmStatus().reason).toMatch(/bytes did not instantiate/);
    const g = smallProblem();
    expect(kernels.resolve<GemmKernel>('Gemm', g).backend).toBe('cpu');
    gemm(g);
    expect(Array.from(g.c)).toEqual([4, 5, 10, 11]);
    expect(loadWasmBackend(readFileSync(wasmFile))).toMatchObject({ loaded: true, source: 'bytes' });
    expect(kernels.resolve<GemmKernel>('Gemm', g).backend).toBe('wasm');
  });
});

describe('loader', () => {
  it('reports a missing binary instead of throwing, naming the paths and the build command', () => {
    const result = loadWasmSync('no-such-kernel');
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.reason).toMatch(/wasm\/no-such-kernel\.wasm not found/);
      expect(result.reason).toMatch(/build:wasm/);
    }
  });
});

describe('QTK_BACKEND=cpu', () => {
  it('keeps the wasm binary unloaded and the cpu kernel in charge', async () => {
    vi.resetModules();
    vi.stubEnv('QTK_BACKEND', 'cpu');
    try {
      const fresh = await import('../index.js');
      expect(fresh.wasmStatus()).toEqual({ loaded: false, reason: 'disabled by QTK_BACKEND=cpu' });
      const g = smallProblem();
      expect(fresh.kernels.resolve('Gemm', g).backend).toBe('cpu');
      fresh.gemm(g);
      expect(Array.from(g.c)).toEqual([4, 5, 10, 11]);
    } finally {
      vi.unstubAllEnvs();
      vi.resetModules();
    }
  });
});
