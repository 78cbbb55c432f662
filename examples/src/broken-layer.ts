// The profiler's worked example: MobileHybridNet quantized for a march with one layer deliberately broken
// (its output given a tiny fixed scale), then profiled: the report and the first-divergence walk must both
// name that layer first.
import { calibrate, convertFx, prepareQatFx } from '@qtk/core';
import { defaultQatOutQconfig, getDefaultQconfig, setFakeQuantize } from '@qtk/fake-quant';
import { type GraphModule, symbolicTrace } from '@qtk/ir';
import { modelProfiler, type ModelProfilerResult } from '@qtk/profiler/node';
import type { Tensor } from '@qtk/tensor';
import type { MobileHybridNet } from './mobile-hybrid-net.js';

/** The layer the example breaks: block1's 1×1 projection (conv + BN), fused as `block1.project.1`. */
export const BROKEN_CONV = 'block1.project.0';
export const BROKEN_NODE = 'block1.project.1';

export interface BrokenLayerOptions {
  readonly march: string;
  readonly calibration: readonly Tensor[];
  /** Inputs the profiler compares the stages on. */
  readonly inputs: Tensor;
  /** The broken layer's fixed output scale (default 1e-5, far below what its values need). */
  readonly scale?: number;
  /** Where to write profiler.html (null: nothing written). */
  readonly outDir: string | null;
  readonly runtime?: boolean;
}

export interface BrokenLayerResult extends ModelProfilerResult {
  readonly float: GraphModule;
  readonly calibrated: GraphModule;
  readonly fixed: GraphModule;
}

/** Quantizes `model` with `BROKEN_CONV`'s output at a tiny fixed scale and profiles float vs calibrated. */
export async function profileBrokenLayer(model: MobileHybridNet, o: BrokenLayerOptions): Promise<BrokenLayerResult> {
  model.eval();
  const qconfig = getDefaultQconfig('fake_quant', 'fake_quant', 'min_max', 'min_max');
  const broken = getDefaultQconfig('fake_quant', 'fake_quant', 'fixed_scale', 'min_max', { scale: o.scale ?? 1e-5 });
  const calibrated = prepareQatFx(
    model,
    { global: qconfig, moduleName: { fc: defaultQatOutQconfig, [BROKEN_CONV]: broken } },
    { march: o.march, onWarning: () => {} },
  );
  calibrate(calibrated, o.calibration);
  setFakeQuantize(calibrated, 'VALIDATION');
  const fixed = convertFx(calibrated, { march: o.march, onWarning: () => {} });
  const float = symbolicTrace(model);
  const profiled = await modelProfiler(float, calibrated, o.inputs, {
    mode: 'FvsQ',
    outDir: o.outDir,
    stages: { float, fakeQuant: calibrated, fixed },
    ...(o.runtime === false ? { runtime: false } : {}),
    title: `MobileHybridNet on ${o.march}, ${BROKEN_NODE} broken (fixed scale ${o.scale ?? 1e-5})`,
  });
  return { ...profiled, float, calibrated, fixed };
}
