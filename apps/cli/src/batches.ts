import { batchesOf } from '@qtk/nn';
import type { Tensor } from '@qtk/tensor';

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
