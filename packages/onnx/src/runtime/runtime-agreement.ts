// Whether a runtime computed what QTK computes: the checks that decide whether onnxruntime's forward passes may
// stand in for QTK's (calibration, a float model file's evaluation).
import { PairSums } from '@qtk/nn';
import { Tensor } from '@qtk/tensor';

/**
 * Why the runtime's value differs from QTK's, or null: another shape, a non-finite element that is not the same
 * non-finite value (NaN matches NaN), or finite elements more than `tolerance` times the larger of 1 and QTK's
 * largest |element| apart (onnxruntime's sigmoid and tanh approximate within about 1e-7 absolute, so small values
 * are judged against 1).
 */
export function runtimeDifference(qtk: Tensor, runtime: Tensor, tolerance: number): string | null {
  if (qtk.shape.join() !== runtime.shape.join())
    return `shape [${runtime.shape.join(', ')}] instead of [${qtk.shape.join(', ')}]`;
  const a = qtk.values();
  const b = runtime.values();
  const sums = new PairSums();
  for (let i = 0; i < a.length; i++) {
    const [x, y] = [a[i]!, b[i]!];
    if (Number.isFinite(x) && Number.isFinite(y)) sums.add(y, x);
    else if (!Object.is(x, y) && !(Number.isNaN(x) && Number.isNaN(y)))
      return `element ${i} is ${y} against QTK's ${x}`;
  }
  const worst = sums.maxAbsError;
  return worst > tolerance * Math.max(sums.yMaxAbs, 1) ? `largest difference ${worst.toPrecision(3)}` : null;
}

/** The first `n` rows of a batch (the whole batch when it has fewer): the example an export and its check run on. */
export function leadingRows(x: Tensor, n: number): Tensor {
  const rows = Math.min(n, x.shape[0] ?? 1);
  if (x.ndim === 0 || rows === x.shape[0]) return x;
  const per = x.size / x.shape[0]!;
  return new Tensor({ data: x.values().slice(0, rows * per), shape: [rows, ...x.shape.slice(1)], dtype: x.dtype });
}
