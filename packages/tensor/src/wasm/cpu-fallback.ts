import { kernels } from '../registry.js';

/** Records that `what` ran on cpu, and why (the backend's status shows the last one). */
export type NoteFallback = (what: string, error: Error) => void;

/** The cpu kernel of `op`, which every wasm kernel falls back to. */
export function cpuKernel<F>(op: string): F {
  return kernels.kernelOn<F>(op, 'cpu')!.fn;
}

/**
 * Runs `wasm`; when wasm memory could not grow (a RangeError) notes `op detail` and runs `cpu` instead.
 * Any other error propagates: a bad argument is no reason to change kernels.
 */
export function orCpu<R>(note: NoteFallback, op: string, detail: string, wasm: () => R, cpu: () => R): R {
  try {
    return wasm();
  } catch (error) {
    if (!(error instanceof RangeError)) throw error;
    note(`${op} ${detail}`, error);
    return cpu();
  }
}
