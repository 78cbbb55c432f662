import { QTensor } from '@qtk/fixed-point';
import type { GraphModule } from '@qtk/ir';
import { noGrad, Tensor } from '@qtk/tensor';

/** Consecutive batches of `batch` samples (the last one shorter), as views of `x`'s data. */
export function* batchesOf(x: Tensor, batch: number): Generator<Tensor> {
  const n = x.shape[0]!;
  const per = x.size / n;
  const data = x.values() as Float32Array;
  for (let i = 0; i < n; i += batch) {
    const k = Math.min(batch, n - i);
    yield new Tensor({
      data: data.subarray(i * per, (i + k) * per),
      shape: [k, ...x.shape.slice(1)],
      dtype: 'float32',
    });
  }
}

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
      const classes = values.length / k;
      for (let i = 0; i < k; i++) {
        let best = 0;
        for (let c = 1; c < classes; c++) if (values[i * classes + c]! > values[i * classes + best]!) best = c;
        out[at + i] = best;
      }
      at += k;
      onBatch(++done);
    }
  });
  return out;
}
