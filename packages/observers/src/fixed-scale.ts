import { observerOptionsSchema, type ObserverState, type QParams } from '@qtk/spec';
import { ShapeError, type Tensor } from '@qtk/tensor';
import { z } from 'zod';
import { ObserverBase, numberArray } from './observer-base.js';

export const fixedScaleOptionsSchema = observerOptionsSchema({
  /** One scale (per tensor) or one per channel (with chAxis >= 0). */
  scale: z.union([z.number().positive(), z.array(z.number().positive()).nonempty()]).default(1),
}).superRefine((o, ctx) => {
  const n = Array.isArray(o.scale) ? o.scale.length : 1;
  if (o.chAxis < 0 && n !== 1)
    ctx.addIssue({
      code: z.ZodIssueCode.custom,
      path: ['scale'],
      message: `a per-tensor fixed scale is one number, got ${n}`,
    });
});
export type FixedScaleOptions = z.output<typeof fixedScaleOptionsSchema>;

/**
 * Always returns its configured scale (e.g. 1/128 for inputs normalised to [-1, 1]); observing
 * data changes nothing. The state records the scale so a checkpoint keeps it; merge checks the
 * other worker used the same one.
 */
export class FixedScaleObserver extends ObserverBase<FixedScaleOptions> {
  private scale: Float32Array;

  constructor(options: unknown = {}) {
    super('fixed_scale', fixedScaleOptionsSchema, options, 1);
    this.scale = Float32Array.from(Array.isArray(this.options.scale) ? this.options.scale : [this.options.scale]);
  }

  observe(_x: Tensor): void {}

  hasData(): boolean {
    return true;
  }

  computeQparams(): QParams {
    return {
      scale: Float32Array.from(this.scale),
      zeroPoint: 0,
      dtype: this.options.dtype,
      quantMin: this.quantRange.quantMin,
      quantMax: this.quantRange.quantMax,
      chAxis: this.options.chAxis,
    };
  }

  state(): ObserverState {
    return this.makeState({ scale: Array.from(this.scale) });
  }

  load(state: ObserverState): void {
    const s = numberArray(this.checkState(state, 'load'), 'scale', this.name);
    this.scale = Float32Array.from(s);
  }

  merge(other: ObserverState): void {
    const s = numberArray(this.checkState(other, 'merge'), 'scale', this.name);
    if (s.length !== this.scale.length || s.some((v, i) => Math.fround(v) !== this.scale[i])) {
      throw new ShapeError(
        `observer '${this.name}': cannot merge a fixed scale [${s.join(', ')}] into [${Array.from(this.scale).join(', ')}]`,
      );
    }
  }

  reset(): void {}
}
