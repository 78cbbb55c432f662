import { afterEach, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Generator, Tensor } from '../index.js';
import { kernels } from '../registry.js';
import { ACTIVATION_KINDS } from './wasm-activation.js';
import { loadWasmBackend, wasmStatus } from './wasm-backend.js';

type Kernel = (inputs: Tensor[], attrs: { min?: number; max?: number }) => Tensor;
const bits = (t: Tensor): number[] => Array.from(new Uint32Array((t.values() as Float32Array).slice().buffer));

/** Values on every branch: both zeros, NaN, ±Infinity, the break points ±3, 0, 6 and their neighbours, and random ones. */
function awkward(n: number, gen: Generator): Tensor {
  const special = [
    0,
    -0,
    Number.NaN,
    Infinity,
    -Infinity,
    3,
    -3,
    6,
    0.1,
    -0.1,
    2.9999998,
    -2.9999998,
    5.9999995,
    6.0000005,
  ];
  const v = Float32Array.from({ length: n }, (_, i) =>
    i % 3 === 0 ? special[(i / 3) % special.length]! : (gen.nextUint32() / 2 ** 32 - 0.5) * 16,
  );
  return new Tensor({ data: v, shape: [n], dtype: 'float32' });
}

afterEach(() => {
  if (!wasmStatus().loaded) loadWasmBackend();
});

describe('wasm Clip, Relu6, HardSwish, HardSigmoid against the cpu kernels', () => {
  const cases: [string, { min?: number; max?: number }][] = [
    ['Relu6', {}],
    ['HardSwish', {}],
    ['HardSigmoid', {}],
    ['Clip', { min: 0, max: 6 }],
    ['Clip', { min: 0.1, max: 2.7 }], // bounds that are not float32 values
    ['Clip', { min: -Infinity, max: 1 }],
    ['Clip', { min: -1e-3, max: Infinity }],
  ];
  it.each(cases)('%s %o: the same bits, the tail included', (op, attrs) => {
    const x = awkward(4099, new Generator(9));
    const wasm = kernels.kernelOn<Kernel>(op, 'wasm')!;
    const cpu = kernels.kernelOn<Kernel>(op, 'cpu')!;
    expect(kernels.resolve(op, [x], attrs).backend).toBe('wasm');
    const w = wasm.fn([x], attrs);
    expect(bits(w)).toEqual(bits(cpu.fn([x], attrs)));
    // and the values that matter, from the definitions
    const at = (i: number): number => w.values()[i]!;
    if (op === 'Relu6') expect([at(0), at(12), at(21), at(27)]).toEqual([0, 0, 6, 0]); // 0, −∞, 6, −0.1
    if (op === 'HardSwish') expect(at(15)).toBe(3); // x = 3
    if (op === 'HardSigmoid') expect(at(18)).toBe(0); // x = −3
  });

  it('small, integer and non-contiguous tensors stay on the cpu kernels', () => {
    const small = new Tensor({ data: new Float32Array(100), shape: [100], dtype: 'float32' });
    expect(kernels.resolve('Relu6', [small], {}).backend).toBe('cpu');
    const ints = new Tensor({ data: new Int32Array(4096), shape: [4096], dtype: 'int32' });
    expect(kernels.resolve('Clip', [ints], { min: 0, max: 6 }).backend).toBe('cpu');
    const big = new Tensor({ data: new Float32Array(4096), shape: [64, 64], dtype: 'float32' }).transpose(0, 1);
    expect(kernels.resolve('HardSwish', [big], {}).backend).toBe('cpu');
    expect(Object.keys(ACTIVATION_KINDS)).toEqual(['Clip', 'Relu6', 'HardSwish', 'HardSigmoid']);
  });

  it.each(['gemm.wasm', 'gemm-relaxed.wasm'])('the single-thread build wasm/%s runs them too', (file) => {
    const bytes = readFileSync(fileURLToPath(new URL(`../../wasm/${file}`, import.meta.url)));
    const x = awkward(2051, new Generator(2));
    const expected = bits(kernels.kernelOn<Kernel>('HardSwish', 'cpu')!.fn([x], {}));
    try {
      expect(loadWasmBackend(bytes)).toMatchObject({ loaded: true, source: 'bytes' });
      expect(bits(kernels.kernelOn<Kernel>('HardSwish', 'wasm')!.fn([x], {}))).toEqual(expected);
    } finally {
      loadWasmBackend();
    }
  });
});
