import {
  batchNormDims,
  unpackBatchNorm,
  type BatchNormBackwardAttrs,
  type BatchNormBackwardKernel,
  type BatchNormKernel,
} from '../ops/batch-norm.js';
import type { ReluBackwardKernel } from '../ops/unary.js';
import { f32, make } from '../ops/util.js';
import { registerKernel, type Saved, type TensorKernel } from '../registry.js';
import { cpuKernel, type NoteFallback, orCpu } from './cpu-fallback.js';
import { shapesEqual } from '../shape.js';
import type { Tensor } from '../tensor.js';
import { MAX_WASM_BYTES } from './wasm-gemm.js';
import { wasmPointwiseBytes, type WasmPointwise } from './wasm-pointwise.js';

// The wasm BatchNormalization, BatchNormalizationBackward, Relu, ReluBackward and Add kernels.
// They take contiguous float32 tensors above a size where the fixed cost of a call (staging,
// copies, small per-channel arrays) is repaid; Add only without broadcasting. Everything else,
// and a failed memory.grow at run time, goes to the cpu kernel.

/** Smallest tensor the wasm Relu, ReluBackward and Add take (from bench/pointwise.ts --small: even at 1024). */
export const ELEMENTWISE_MIN_ELEMENTS = 1024;
/** Smallest input the wasm batch-norm kernels take (even with the TypeScript loops at about 2048). */
export const BATCH_NORM_MIN_ELEMENTS = 4096;

const dense = (t: Tensor | undefined): boolean => !!t && t.dtype === 'float32' && t.isContiguous();

function fits(t: Tensor, min: number, channels = 0): boolean {
  return t.size >= min && wasmPointwiseBytes(t.size, channels) <= MAX_WASM_BYTES;
}

export function registerWasmPointwiseKernels(pointwise: () => WasmPointwise | null, noteFallback: NoteFallback): void {
  registerKernel<BatchNormKernel>({
    op: 'BatchNormalization',
    backend: 'wasm',
    accepts: (inputs: Tensor[]) => {
      const x = inputs[0]!;
      return dense(x) && x.ndim >= 2 && fits(x, BATCH_NORM_MIN_ELEMENTS, x.shape[1]);
    },
    fn: (inputs, attrs, saved) =>
      orCpu(
        noteFallback,
        'BatchNormalization',
        inputs[0]!.shape.join('×'),
        () => {
          const { x, w, b, rm, rv } = unpackBatchNorm(inputs, attrs);
          const d = batchNormDims(x);
          const mean = attrs.training ? new Float32Array(d.c) : Float32Array.from(f32(rm!));
          const variance = attrs.training ? new Float32Array(d.c) : Float32Array.from(f32(rv!));
          const { y, invstd } = pointwise()!.bnForward({
            ...d,
            x: f32(x),
            training: attrs.training,
            eps: attrs.eps,
            ...(w ? { weight: f32(w) } : {}),
            ...(b ? { bias: f32(b) } : {}),
            mean,
            variance,
          });
          saved.mean = mean;
          saved.invstd = invstd;
          const out = make(y, x.shape);
          return attrs.training ? [out, make(mean, [d.c]), make(variance, [d.c])] : [out];
        },
        () => cpuKernel<BatchNormKernel>('BatchNormalization')(inputs, attrs, saved),
      ),
  });

  registerKernel<BatchNormBackwardKernel>({
    op: 'BatchNormalizationBackward',
    backend: 'wasm',
    accepts: (inputs: Tensor[]) => {
      const [x, gy] = inputs;
      return (
        dense(x) && dense(gy) && x!.size === gy!.size && x!.ndim >= 2 && fits(x!, BATCH_NORM_MIN_ELEMENTS, x!.shape[1])
      );
    },
    fn: (inputs, attrs: BatchNormBackwardAttrs, saved: Saved) =>
      orCpu(
        noteFallback,
        'BatchNormalizationBackward',
        inputs[0]!.shape.join('×'),
        () => {
          const [x, gy, w] = inputs as [Tensor, Tensor, Tensor | undefined];
          const d = batchNormDims(x);
          const r = pointwise()!.bnBackward({
            ...d,
            x: f32(x),
            gy: f32(gy),
            training: attrs.training,
            ...(w ? { weight: f32(w) } : {}),
            mean: saved.mean as Float32Array,
            invstd: saved.invstd as Float32Array,
            needInput: attrs.needInput,
          });
          return [
            r.dx ? make(r.dx, x.shape) : null,
            w && attrs.needWeight ? make(r.dw, w.shape) : null,
            attrs.needBias ? make(r.db, [d.c]) : null,
          ];
        },
        () => cpuKernel<BatchNormBackwardKernel>('BatchNormalizationBackward')(inputs, attrs, saved),
      ),
  });

  registerKernel<TensorKernel>({
    op: 'Relu',
    backend: 'wasm',
    accepts: ([x]: Tensor[]) => dense(x) && fits(x!, ELEMENTWISE_MIN_ELEMENTS),
    fn: (inputs, attrs, saved) =>
      orCpu(
        noteFallback,
        'Relu',
        inputs[0]!.shape.join('×'),
        () => make(pointwise()!.relu(f32(inputs[0]!)), inputs[0]!.shape),
        () => cpuKernel<TensorKernel>('Relu')(inputs, attrs, saved),
      ),
  });

  registerKernel<ReluBackwardKernel>({
    op: 'ReluBackward',
    backend: 'wasm',
    accepts: ([y, g]: Tensor[]) => dense(y) && dense(g) && y!.size === g!.size && fits(y!, ELEMENTWISE_MIN_ELEMENTS),
    fn: (inputs, attrs) =>
      orCpu(
        noteFallback,
        'ReluBackward',
        inputs[0]!.shape.join('×'),
        () => make(pointwise()!.reluBackward(f32(inputs[0]!), f32(inputs[1]!)), inputs[0]!.shape),
        () => cpuKernel<ReluBackwardKernel>('ReluBackward')(inputs, attrs),
      ),
  });

  registerKernel<TensorKernel>({
    op: 'Add',
    backend: 'wasm',
    accepts: ([a, b]: Tensor[]) =>
      dense(a) && dense(b) && shapesEqual(a!.shape, b!.shape) && fits(a!, ELEMENTWISE_MIN_ELEMENTS),
    fn: (inputs, attrs, saved) =>
      orCpu(
        noteFallback,
        'Add',
        inputs[0]!.shape.join('×'),
        () => make(pointwise()!.add(f32(inputs[0]!), f32(inputs[1]!)), inputs[0]!.shape),
        () => cpuKernel<TensorKernel>('Add')(inputs, attrs, saved),
      ),
  });
}
