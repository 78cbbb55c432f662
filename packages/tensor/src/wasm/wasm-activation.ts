import { make } from '../ops/util.js';
import { registerKernel } from '../registry.js';
import { cpuKernel, type NoteFallback, orCpu } from './cpu-fallback.js';
import type { Tensor } from '../tensor.js';
import { align64, type Arena } from './wasm-arena.js';
import { MAX_WASM_BYTES } from './wasm-gemm.js';

// Host side of assembly/_activation.ts: Clip, Relu6, HardSwish and HardSigmoid forward on wasm. The cpu
// kernels of these ops share one generic loop (defineUnary) whose call to each op's function V8 cannot
// inline once several ops have run through it: measured on MobileNetV2's calibration, its Clips alone took
// a quarter of `qtk quantize`.

export interface ActivationExports {
  activation(kind: number, x: number, y: number, n: number, a: number, b: number): void;
}

export interface WasmActivation {
  run(kind: number, x: Float32Array, a: number, b: number): Float32Array;
}

/** The ops and their kernel numbers in assembly/_activation.ts. */
export const ACTIVATION_KINDS = { Clip: 0, Relu6: 1, HardSwish: 2, HardSigmoid: 3 } as const;

/** Smallest tensor the wasm kernels take. */
export const ACTIVATION_MIN_ELEMENTS = 1024;

export function createWasmActivation(exports: ActivationExports, arena: Arena): WasmActivation {
  return {
    run(kind, x, a, b) {
      const xp = arena.base;
      const yp = align64(xp + x.length * 4);
      const heap = arena.reserve(align64(yp + x.length * 4) - arena.base);
      heap.set(x, xp >>> 2);
      exports.activation(kind, xp, yp, x.length, a, b);
      const out = new Float32Array(x.length);
      out.set(arena.heap().subarray(yp >>> 2, (yp >>> 2) + x.length));
      return out;
    },
  };
}

type Kernel = (inputs: Tensor[], attrs: { min?: number; max?: number }) => Tensor;

/** The wasm kernels; a failed memory.grow at run time falls back to the cpu kernel. */
export function registerWasmActivationKernels(
  activation: () => WasmActivation | null,
  noteFallback: NoteFallback,
): void {
  for (const [op, kind] of Object.entries(ACTIVATION_KINDS)) {
    registerKernel<Kernel>({
      op,
      backend: 'wasm',
      accepts: (inputs: Tensor[]) => {
        const x = inputs[0]!;
        return (
          activation() !== null &&
          x.dtype === 'float32' &&
          x.isContiguous() &&
          x.size >= ACTIVATION_MIN_ELEMENTS &&
          2 * (x.size * 4 + 64) <= MAX_WASM_BYTES
        );
      },
      fn: (inputs, attrs) => {
        const x = inputs[0]!;
        return orCpu(
          noteFallback,
          op,
          x.shape.join('×'),
          () => make(activation()!.run(kind, x.values() as Float32Array, attrs.min ?? 0, attrs.max ?? 0), x.shape),
          () => cpuKernel<Kernel>(op)(inputs, attrs),
        );
      },
    });
  }
}
