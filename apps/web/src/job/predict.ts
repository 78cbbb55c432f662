import { QTensor } from '@qtk/fixed-point';
import type { GraphModule } from '@qtk/ir';
import { batchesOf, top1 } from '@qtk/nn';
import { noGrad, type Tensor } from '@qtk/tensor';

/** The model's first output as float values (a fixed-point output is dequantized). */
function floatValues(y: unknown): { values: ArrayLike<number>; shape: readonly number[] } {
  const v = Array.isArray(y) ? y[0] : y;
  const t = v instanceof QTensor ? v.dequantize() : (v as Tensor);
  return { values: t.values(), shape: t.shape };
}

/** Top-1 class of every sample, in batches; `onBatch` gets the number of batches done. */
export function predict(
  model: GraphModule,
  images: Tensor,
  batch: number,
  onBatch: (done: number) => void,
): Int32Array {
  const n = images.shape[0]!;
  const out = new Int32Array(n);
  model.eval();
  let done = 0;
  let at = 0;
  noGrad(() => {
    for (const x of batchesOf(images, batch)) {
      const { values, shape } = floatValues(model.call(x));
      const k = shape[0]!;
      out.set(top1(values, k), at);
      at += k;
      onBatch(++done);
    }
  });
  return out;
}
