import {
  defaultCalibQconfig,
  FakeQuantize,
  type FakeQuantKwargs,
  type QConfig,
  qconfig,
  withArgs,
} from '@qtk/fake-quant';
import type { GraphModule } from '@qtk/ir';
import { QConfigError, type ObserverDType } from '@qtk/spec';
import type { Tensor } from '@qtk/tensor';
import { activationFakeQuantOf } from '../activation-fake-quant-of.js';
import { calibrate } from '../calibration.js';
import { QatModule } from '../qat-module.js';
import { moduleOf } from '../qconfig-of.js';
import type { NamedQconfigSetter } from '../qconfig-setter.js';

export interface FixedActivationScaleOptions {
  /** The calibration batches (one Tensor or Tensor[] per batch); default: prepareQatFx's exampleInputs as one batch. */
  readonly batches?: Iterable<Tensor | Tensor[]>;
  /** Calibrate on at most this many batches. */
  readonly numBatches?: number;
  /** Options of the calibration fake-quants (observer, percentile, ...); default defaultCalibQconfig's (min_max). */
  readonly calibQkwargs?: FakeQuantKwargs;
}

/**
 * QAT with activation scales fixed from calibration: calibrates a separate copy of the model
 * (prepared with the qconfigs earlier setters chose) on `batches`, then gives every node with an
 * activation fake-quant a fixed-scale one ('fixed_scale' observer) of its calibrated scale and
 * dtype, so QAT trains the weights (and their per-channel scales) only. Put it after the setters
 * that choose dtypes. Nodes whose QAT form has inner fake-quants of its own (composite softmax,
 * layernorm) keep observing: one fixed scale cannot stand for their intermediates.
 */
export function fixedActivationScaleSetter(options: FixedActivationScaleOptions = {}): NamedQconfigSetter {
  return {
    name: 'fixed activation scales',
    apply(ctx) {
      const batches = options.batches ?? (ctx.exampleInputs ? [[...ctx.exampleInputs]] : null);
      if (!batches)
        throw new QConfigError(
          'fixedActivationScaleSetter: nothing to calibrate on; pass exampleInputs to prepareQatFx or fixedActivationScaleSetter({ batches })',
        );
      const current = new Map<string, QConfig | null>();
      for (const n of ctx.nodes) current.set(n.name, ctx.qconfigOf(n.name));
      const forCalibration = new Map<string, QConfig | null>();
      for (const [name, q] of current) {
        if (!q?.activation) continue;
        const o = q.activation.options;
        const calib = defaultCalibQconfig.activation!.withArgs({
          dtype: o.dtype,
          quantMin: o.quantMin ?? null,
          quantMax: o.quantMax ?? null,
          ...options.calibQkwargs,
        });
        forCalibration.set(name, qconfig(calib, q.weight));
      }
      const training = ctx.model.modules().map((m) => [m, m.training] as const);
      const scratch = ctx.prepare(forCalibration);
      calibrate(scratch, batches, {
        ...(options.numBatches !== undefined ? { numBatches: options.numBatches } : {}),
        onWarning: (m) => ctx.warn(`fixedActivationScaleSetter: ${m}`),
      });
      for (const [m, t] of training) m.training = t; // calibration switched the shared modules to eval
      const observing: string[] = [];
      for (const [name, q] of current) {
        if (!q?.activation) continue;
        const fq = activationFakeQuantOf(scratch, name);
        if (!fq) continue;
        if (fq.options.chAxis >= 0 || hasInnerFakeQuants(scratch, name)) {
          observing.push(name);
          continue;
        }
        const fixed = withArgs({
          observer: 'fixed_scale',
          observerOptions: { scale: fq.scale.values()[0]! },
          dtype: fq.dtype as ObserverDType,
          quantMin: fq.quantMin,
          quantMax: fq.quantMax,
          rounding: q.activation.options.rounding ?? null,
        });
        ctx.setQconfig(name, qconfig(fixed, q.weight));
      }
      if (observing.length)
        ctx.warn(
          `fixedActivationScaleSetter: ${observing.join(', ')} keep observing their activation scales (composite QAT forms or per-channel scales, which one fixed scale cannot stand for)`,
        );
      return undefined;
    },
  };
}

/** Whether the node's QAT module holds fake-quants besides its output's (a composite QAT form). */
function hasInnerFakeQuants(gm: GraphModule, name: string): boolean {
  const node = gm.graph.nodes.find((n) => n.name === name);
  const m = node ? moduleOf(gm, node) : null;
  return m instanceof QatModule && m.module.modules().some((x) => x instanceof FakeQuantize);
}
