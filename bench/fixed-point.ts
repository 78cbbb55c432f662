import { convertFx } from '@qtk/core';
import { accuracyOf, predict, takeBatch, type Dataset } from '@qtk/examples';
import { agreement } from '@qtk/nn';
import type { GraphModule } from '@qtk/ir';
import '@qtk/march-bayes';
import '@qtk/march-bernoulli2';

export const MARCHES = ['bernoulli2', 'bayes'] as const;
export type MarchId = (typeof MARCHES)[number];

export interface FixedPointBench {
  /** Test accuracy of the converted model. */
  accuracy: number;
  /** Top-1 agreement between the fake-quant model (VALIDATION) and the converted model. */
  agreement: number;
  /** Seconds to run the converted model over the test images, batch 500. */
  evalSeconds: number;
  convertMs: number;
}

/**
 * Converts a calibrated or QAT model (in VALIDATION) for each march and runs the eval protocol on
 * the converted model: accuracy, top-1 agreement with the fake-quant model, and wall time.
 */
export function benchFixedPoint(
  fakeQuant: GraphModule,
  test: Dataset,
  options: { label: string; log?: (m: string) => void; marches?: readonly MarchId[] },
): Partial<Record<MarchId, FixedPointBench>> {
  const fakePred = predict(fakeQuant, test, { label: `${options.label} fake-quant` });
  const out: Partial<Record<MarchId, FixedPointBench>> = {};
  for (const march of options.marches ?? MARCHES) {
    const t0 = performance.now();
    const fixed = convertFx(fakeQuant, { march, onWarning: (m) => options.log?.(`convert warning: ${m}`) });
    const convertMs = performance.now() - t0;
    predict(fixed, takeBatch(test, null, 0, Math.min(500, test.labels.size)), { label: 'warm-up' });
    const t1 = performance.now();
    const pred = predict(fixed, test, { label: `${options.label} ${march} fixed-point` });
    const evalSeconds = (performance.now() - t1) / 1000;
    const r = { accuracy: accuracyOf(pred, test), agreement: agreement(fakePred, pred), evalSeconds, convertMs };
    out[march] = r;
    options.log?.(
      `${options.label} → ${march}: fixed-point accuracy ${(r.accuracy * 100).toFixed(2)} % (fake-quant ${(accuracyOf(fakePred, test) * 100).toFixed(2)} %), ` +
        `agreement ${(r.agreement * 100).toFixed(2)} %, eval ${evalSeconds.toFixed(2)} s for ${test.labels.size} images, convert ${convertMs.toFixed(0)} ms`,
    );
  }
  return out;
}
