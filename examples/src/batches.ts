import { Tensor } from '@qtk/tensor';
import type { Dataset } from './train.js';

/** Gathers `count` samples starting at `start` of `order` (or in dataset order when null) into one batch. */
export function takeBatch(data: Dataset, order: Int32Array | null, start: number, count: number): Dataset {
  const imgs = data.images.values() as Float32Array;
  const labs = data.labels.values() as Int32Array;
  const per = data.images.size / data.images.shape[0]!;
  if (!order) {
    return {
      images: new Tensor({
        data: imgs.subarray(start * per, (start + count) * per),
        shape: [count, ...data.images.shape.slice(1)],
        dtype: 'float32',
      }),
      labels: new Tensor({ data: labs.subarray(start, start + count), shape: [count], dtype: 'int32' }),
    };
  }
  const x = new Float32Array(count * per);
  const y = new Int32Array(count);
  for (let i = 0; i < count; i++) {
    const k = order[start + i]!;
    x.set(imgs.subarray(k * per, (k + 1) * per), i * per);
    y[i] = labs[k]!;
  }
  return {
    images: new Tensor({ data: x, shape: [count, ...data.images.shape.slice(1)], dtype: 'float32' }),
    labels: new Tensor({ data: y, shape: [count], dtype: 'int32' }),
  };
}
