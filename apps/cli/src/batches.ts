import { Tensor } from '@qtk/tensor';

/** Consecutive batches of `batch` samples along axis 0 (the last one may be shorter), as views of the data. */
export function* batchesOf(x: Tensor, batch: number): Generator<Tensor> {
  const n = x.shape[0]!;
  const rest = x.shape.slice(1);
  const per = rest.reduce((p, d) => p * d, 1);
  const data = x.values() as Float32Array;
  for (let i = 0; i < n; i += batch) {
    const k = Math.min(batch, n - i);
    yield new Tensor({ data: data.subarray(i * per, (i + k) * per), shape: [k, ...rest], dtype: 'float32' });
  }
}
