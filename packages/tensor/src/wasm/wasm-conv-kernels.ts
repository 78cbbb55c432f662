import { convPlan, type ConvAttrs, type ConvBackwardAttrs, type ConvBackwardKernel } from '../ops/conv.js';
import type { ConvEpilogueAttrs } from '../ops/conv-epilogue.js';
import { f32, make } from '../ops/util.js';
import { channelSums } from '../ops/conv-im2col.js';
import { registerKernel, type Saved, type TensorKernel } from '../registry.js';
import { cpuKernel, type NoteFallback, orCpu } from './cpu-fallback.js';
import type { Tensor } from '../tensor.js';
import { MAX_WASM_BYTES } from './wasm-gemm.js';
import { wasmConvBytes, type ConvProblem, type WasmConv } from './wasm-conv.js';

// The wasm Conv and ConvBackward kernels: float32 convolutions of any rank (1-d to 3-d), stride,
// padding, dilation and groups, computed image by image inside wasm memory (assembly/_conv.ts).
// They turn down only what would not fit in wasm32 memory; a failed memory.grow at run time
// falls back to the cpu kernel.

function problem(x: Tensor, w: Tensor, attrs: ConvAttrs): ConvProblem & { out: number[] } {
  const pl = convPlan(x, w, attrs);
  return { geom: pl.geom, cout: pl.cout, groups: attrs.groups, out: pl.out };
}

export function registerWasmConvKernels(
  conv: () => WasmConv | null,
  threads: () => number,
  noteFallback: NoteFallback,
): void {
  const fits = (backward: boolean) => (inputs: Tensor[], attrs: ConvAttrs) =>
    wasmConvBytes(problem(inputs[0]!, inputs[1]!, attrs), backward, threads()) <= MAX_WASM_BYTES;

  registerKernel<TensorKernel<ConvAttrs>>({
    op: 'Conv',
    backend: 'wasm',
    accepts: fits(false),
    fn: (inputs, attrs, saved: Saved) => {
      const [x, w, b] = inputs;
      const pr = problem(x!, w!, attrs);
      return orCpu(
        noteFallback,
        'Conv',
        x!.shape.join('×'),
        () => make(conv()!.forward(f32(x!), f32(w!), b ? f32(b) : undefined, pr), [pr.geom.n, pr.cout, ...pr.out]),
        () => cpuKernel<TensorKernel<ConvAttrs>>('Conv')(inputs, attrs, saved),
      );
    },
  });

  registerKernel<TensorKernel<ConvEpilogueAttrs>>({
    op: 'ConvEpilogue',
    backend: 'wasm',
    accepts: (inputs: Tensor[], attrs: ConvEpilogueAttrs) =>
      wasmConvBytes(problem(inputs[0]!, inputs[1]!, attrs), false, threads(), attrs.withAdd) <= MAX_WASM_BYTES,
    fn: (inputs, attrs, saved: Saved) => {
      const [x, w] = inputs;
      const b = attrs.hasBias ? inputs[2] : undefined;
      const other = attrs.withAdd ? inputs[attrs.hasBias ? 3 : 2] : undefined;
      const pr = problem(x!, w!, attrs);
      const epilogue = { add: other ? f32(other) : undefined, activation: attrs.activation };
      return orCpu(
        noteFallback,
        'ConvEpilogue',
        x!.shape.join('×'),
        () =>
          make(conv()!.forward(f32(x!), f32(w!), b ? f32(b) : undefined, pr, epilogue), [
            pr.geom.n,
            pr.cout,
            ...pr.out,
          ]),
        () => cpuKernel<TensorKernel<ConvEpilogueAttrs>>('ConvEpilogue')(inputs, attrs, saved),
      );
    },
  });

  registerKernel<ConvBackwardKernel>({
    op: 'ConvBackward',
    backend: 'wasm',
    accepts: fits(true),
    fn: (inputs, attrs: ConvBackwardAttrs, saved) => {
      const [x, w, gy] = inputs;
      const pr = problem(x!, w!, attrs);
      const gv = f32(gy!);
      const p = gv.length / (pr.geom.n * pr.cout);
      const gradients = (grads: { dx?: Float32Array; dw?: Float32Array }) => [
        grads.dx ? make(grads.dx, x!.shape) : null,
        grads.dw ? make(grads.dw, w!.shape) : null,
        attrs.needBias ? make(channelSums(gv, pr.geom.n, pr.cout, p), [pr.cout]) : null,
      ];
      if (!attrs.needInput && !attrs.needWeight) return gradients({});
      return orCpu(
        noteFallback,
        'ConvBackward',
        x!.shape.join('×'),
        () =>
          gradients(conv()!.backward(f32(x!), f32(w!), gv, pr, { input: attrs.needInput, weight: attrs.needWeight })),
        () => cpuKernel<ConvBackwardKernel>('ConvBackward')(inputs, attrs, saved),
      );
    },
  });
}
