// Classification metrics over predicted class indices: what the demo, the web app, the CLI, the profiler and the
// examples report.
import { InvalidArgumentError } from '@qtk/tensor';

/**
 * The top-1 class of each of `rows` rows of scores laid out row after row (a [rows, classes] tensor's values):
 * the index of the first largest score. A NaN score never wins over a number after it in the row.
 */
export function top1(scores: ArrayLike<number>, rows: number): Int32Array {
  if (!Number.isInteger(rows) || rows < 0 || (rows === 0 ? scores.length !== 0 : scores.length % rows !== 0))
    throw new InvalidArgumentError(
      `top1: ${scores.length} scores do not split into ${rows} rows; pass the number of samples (the batch size)`,
    );
  const out = new Int32Array(rows);
  if (rows === 0) return out;
  const classes = scores.length / rows;
  for (let r = 0, at = 0; r < rows; r++, at += classes) {
    let best = 0;
    for (let c = 1; c < classes; c++) if (scores[at + c]! > scores[at + best]!) best = c;
    out[r] = best;
  }
  return out;
}

/** The fraction of positions where two prediction arrays agree (top-1 agreement); NaN when both are empty. */
export function agreement(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length)
    throw new InvalidArgumentError(
      `agreement: ${a.length} predictions against ${b.length}; compare the two models on the same samples`,
    );
  let same = 0;
  for (let i = 0; i < a.length; i++) if (a[i] === b[i]) same++;
  return same / a.length;
}

/** Top-1 accuracy: the fraction of predicted classes equal to the labels (their agreement). */
export function accuracy(predictions: ArrayLike<number>, labels: ArrayLike<number>): number {
  if (predictions.length !== labels.length)
    throw new InvalidArgumentError(
      `accuracy: ${predictions.length} predictions but ${labels.length} labels; give one label per sample`,
    );
  return agreement(predictions, labels);
}
