import { registerKernel } from '../registry.js';
import type { Tensor } from '../tensor.js';
import { cpuKernel, type NoteFallback, orCpu } from './cpu-fallback.js';

/**
 * Registers the wasm kernel of an observer statistic over a whole float32 tensor (ChannelMinMax,
 * HistogramCounts): it takes dense float32 inputs of at least `minElements` while its engine is loaded,
 * and runs the cpu kernel when wasm memory cannot grow.
 */
export function registerWasmStatisticKernel<A, R>(
  op: string,
  engine: () => { run(x: Float32Array, attrs: A): R } | null,
  minElements: number,
  toTensor: (result: R, attrs: A) => Tensor,
  noteFallback: NoteFallback,
): void {
  type Kernel = (inputs: Tensor[], attrs: A) => Tensor;
  registerKernel<Kernel>({
    op,
    backend: 'wasm',
    accepts: (inputs: Tensor[]) => {
      const x = inputs[0]!;
      return engine() !== null && x.dtype === 'float32' && x.isContiguous() && x.size >= minElements;
    },
    fn: (inputs, attrs) =>
      orCpu(
        noteFallback,
        op,
        `${inputs[0]!.size}`,
        () => toTensor(engine()!.run(inputs[0]!.values() as Float32Array, attrs), attrs),
        () => cpuKernel<Kernel>(op)(inputs, attrs),
      ),
  });
}
