import { InvalidArgumentError, Tensor } from '@qtk/tensor';

/**
 * Consecutive batches of `batch` samples along axis 0 (the last one may be shorter), as views of `x`'s data;
 * with `count`, of its first `count` samples only (all of them when there are fewer).
 */
export function* batchesOf(x: Tensor, batch: number, count?: number): Generator<Tensor> {
  if (!Number.isInteger(batch) || batch < 1)
    throw new InvalidArgumentError(`batchesOf: the batch size must be a positive integer, got ${batch}`);
  if (x.ndim === 0) throw new InvalidArgumentError('batchesOf: expected a tensor with a leading sample dimension');
  if (count !== undefined && !(Number.isInteger(count) && count >= 0))
    throw new InvalidArgumentError(`batchesOf: the sample count must be a non-negative integer, got ${count}`);
  const n = Math.min(x.shape[0]!, count ?? Infinity);
  const rest = x.shape.slice(1);
  const per = rest.reduce((p, d) => p * d, 1);
  const data = x.values();
  for (let i = 0; i < n; i += batch) {
    const k = Math.min(batch, n - i);
    yield new Tensor({ data: data.subarray(i * per, (i + k) * per), shape: [k, ...rest], dtype: x.dtype });
  }
}
