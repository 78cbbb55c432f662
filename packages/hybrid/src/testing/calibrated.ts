// A calibrated fake-quant model for the hybrid tests. Not a test file itself and not part of the package build.
import { calibrate } from '@qtk/core';
import { setFakeQuantize } from '@qtk/fake-quant';
import type { GraphModule } from '@qtk/ir';
import { randomInputs } from '@qtk/test-models';

/** Calibrates `qat` on `batches` (four of [8, 3, 8, 8] by default) and sets it to VALIDATION. */
export function calibrated(qat: GraphModule, batches = [1, 2, 3, 4].map((s) => randomInputs(s, 8))): GraphModule {
  calibrate(qat, batches);
  setFakeQuantize(qat, 'VALIDATION');
  return qat;
}
