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

/** Consecutive batches of every input together: batch j holds rows j·batch.. of each tensor (all of N rows). */
export function* inputBatches(inputs: readonly Tensor[], batch: number): Generator<Tensor[]> {
  const each = inputs.map((x) => batchesOf(x, batch));
  for (;;) {
    const parts = each.map((g) => g.next());
    if (parts.some((p) => p.done)) return;
    yield parts.map((p) => p.value as Tensor);
  }
}

/** The first `n` rows of every input (all rows when there are fewer). */
export function firstRows(inputs: readonly Tensor[], n: number): Tensor[] {
  return inputBatches(inputs, n).next().value ?? [...inputs];
}
