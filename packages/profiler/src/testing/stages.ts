// The float, calibrated and fixed-point stages of a model for the profiler's tests. Not a test file itself
// and not part of the package build.
import { calibrate, convertFx, prepareQatFx } from '@qtk/core';
import { defaultQatOutQconfig, getDefaultQconfig, setFakeQuantize } from '@qtk/fake-quant';
import { type GraphModule, symbolicTrace } from '@qtk/ir';
import type { Module } from '@qtk/nn';
import { randomInputs } from '@qtk/test-models';

export interface Stages {
  readonly float: GraphModule;
  /** Calibrated fake-quant model in VALIDATION state. */
  readonly calibrated: GraphModule;
  readonly fixed: GraphModule;
}

/** The float, calibrated and fixed-point stages of `model` on `march` (min-max observers, fc as high-precision output). */
export function stagesOf(model: Module, march: string, batches = [1, 2, 3].map((s) => randomInputs(s, 8))): Stages {
  model.eval();
  const float = symbolicTrace(model);
  const qconfig = getDefaultQconfig('fake_quant', 'fake_quant', 'min_max', 'min_max');
  const calibrated = prepareQatFx(
    model,
    { global: qconfig, moduleName: { fc: defaultQatOutQconfig } },
    { march, onWarning: () => {} },
  );
  calibrate(calibrated, batches);
  setFakeQuantize(calibrated, 'VALIDATION');
  const fixed = convertFx(calibrated, { march, onWarning: () => {} });
  return { float, calibrated, fixed };
}
