import {
  ObserverStateError,
  StateVersionError,
  parseOptions,
  resolveQuantRange,
  scalesFromRanges,
  type ObserverBaseOptions,
  type ObserverState,
  type ObserverV1,
  type QParams,
  type QuantRange,
} from '@qtk/spec';
import type { Tensor } from '@qtk/tensor';
import { DTypeError, isFloating } from '@qtk/tensor';
import type { z } from 'zod';

/** Common plumbing of the built-in observers: options, quant range, state checks, qparams from min/max. */
export abstract class ObserverBase<O extends ObserverBaseOptions> implements ObserverV1 {
  readonly apiVersion = 1 as const;
  readonly options: Readonly<O>;
  readonly quantRange: QuantRange;

  constructor(
    readonly name: string,
    schema: z.ZodType<O, z.ZodTypeDef, unknown>,
    options: unknown,
    /** Layout version of this kind's state. */
    protected readonly stateVersion: number,
  ) {
    this.options = Object.freeze(parseOptions(schema, options, `observer '${name}'`));
    this.quantRange = resolveQuantRange(this.options.dtype, this.options.quantMin, this.options.quantMax);
  }

  /** @qtk/nn's deepCopy (COPY_FIELDS) copies an observer's statistics with the module holding it instead of sharing them. */
  get [Symbol.for('qtk.deepCopy.fields')](): boolean {
    return true;
  }

  abstract observe(x: Tensor): void;
  abstract hasData(): boolean;
  abstract computeQparams(): QParams;
  abstract state(): ObserverState;
  abstract load(state: ObserverState): void;
  abstract merge(other: ObserverState): void;
  abstract reset(): void;

  /** The float values of `x` (row-major), after checking its dtype. */
  protected valuesOf(x: Tensor): ArrayLike<number> {
    if (!isFloating(x.dtype)) {
      throw new DTypeError(`observer '${this.name}': observe() expects a float tensor, got ${x.dtype}`);
    }
    return x.values();
  }

  protected requireData(): void {
    if (!this.hasData()) {
      throw new ObserverStateError(
        `observer '${this.name}' has seen no data; run calibration batches through it (or load a state) before computing qparams`,
      );
    }
  }

  protected qparamsFromMinMax(min: ArrayLike<number>, max: ArrayLike<number>): QParams {
    return {
      scale: scalesFromRanges(min, max, this.quantRange),
      zeroPoint: 0,
      dtype: this.options.dtype,
      quantMin: this.quantRange.quantMin,
      quantMax: this.quantRange.quantMax,
      chAxis: this.options.chAxis,
    };
  }

  protected makeState(stats: ObserverState['stats']): ObserverState {
    return { observer: this.name, version: this.stateVersion, stats };
  }

  /** Rejects a state of another kind or version; returns its stats. */
  protected checkState(state: ObserverState, action: 'load' | 'merge'): ObserverState['stats'] {
    if (!state || typeof state !== 'object' || typeof state.stats !== 'object' || state.stats === null) {
      throw new StateVersionError(`observer '${this.name}': cannot ${action} a value that is not an observer state`);
    }
    if (state.observer !== this.name) {
      throw new StateVersionError(`observer '${this.name}': cannot ${action} a state of observer '${state.observer}'`);
    }
    if (state.version !== this.stateVersion) {
      throw new StateVersionError(
        `observer '${this.name}': state version ${state.version} is not supported (this build reads version ${this.stateVersion})`,
      );
    }
    return state.stats;
  }
}

/** A finite number array from a state field, or a StateVersionError naming the field. */
export function numberArray(stats: ObserverState['stats'], key: string, observer: string): number[] {
  const v = stats[key];
  if (!Array.isArray(v) || v.some((x) => typeof x !== 'number' && x !== null)) {
    throw new StateVersionError(`observer '${observer}': state field '${key}' must be an array of numbers`);
  }
  // JSON turns ±Infinity into null; the only place that can happen is an untouched min/max.
  return (v as (number | null)[]).map((x) => (x === null ? NaN : x));
}

export function numberField(stats: ObserverState['stats'], key: string, observer: string): number {
  const v = stats[key];
  if (typeof v !== 'number')
    throw new StateVersionError(`observer '${observer}': state field '${key}' must be a number`);
  return v;
}
