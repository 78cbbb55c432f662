// How a FakeQuantize's observer resumes from a state dict: from the saved statistics when it can
// read them, otherwise from the saved scale (calibrated with another observer kind, or a file
// written before observer statistics were saved).
import type { JsonValue } from '@qtk/nn';
import { observerStateSchema, StateVersionError, type ObserverState, type ObserverV1 } from '@qtk/spec';

/** Layout version of FakeQuantize's extra state. */
export const FAKE_QUANTIZE_EXTRA_STATE_VERSION = 1;

/** What a FakeQuantize keeps in a state dict beside its `scale` and `initialized` buffers. */
export interface FakeQuantizeExtraState {
  version: typeof FAKE_QUANTIZE_EXTRA_STATE_VERSION;
  /** The observer's statistics (`observer.state()`), with the observer kind and its layout version. */
  observer: ObserverState;
}

/** The observer state inside a FakeQuantize extra state; StateVersionError for anything else. */
export function parseFakeQuantizeExtraState(value: JsonValue): ObserverState {
  const v = value as { version?: unknown; observer?: unknown } | null;
  if (typeof v !== 'object' || v === null || Array.isArray(v)) {
    throw new StateVersionError('FakeQuantize: the extra state must be an object { version, observer }');
  }
  if (v.version !== FAKE_QUANTIZE_EXTRA_STATE_VERSION) {
    const newer = typeof v.version === 'number' && v.version > FAKE_QUANTIZE_EXTRA_STATE_VERSION;
    throw new StateVersionError(
      `FakeQuantize: extra state version ${String(v.version)} is not supported (this build reads version ${FAKE_QUANTIZE_EXTRA_STATE_VERSION})` +
        (newer ? '; it was saved by a newer QTK: upgrade @qtk/fake-quant' : ''),
    );
  }
  const parsed = observerStateSchema.safeParse(v.observer);
  if (!parsed.success) {
    throw new StateVersionError('FakeQuantize: the extra state holds no observer state { observer, version, stats }');
  }
  return parsed.data as ObserverState;
}

/** An observer that can start from a range as if it had observed it (the min/max family's `setRange`). */
export interface RangeSeedableObserver extends ObserverV1 {
  setRange(min: ArrayLike<number>, max: ArrayLike<number>): void;
}

export function canSeedRange(o: ObserverV1): o is RangeSeedableObserver {
  return typeof (o as Partial<RangeSeedableObserver>).setRange === 'function';
}

/**
 * Loads `state` into `observer`. A state of the observer's own kind and layout must load (its
 * errors propagate); one of another kind or layout version loads when the observer accepts it
 * (the min/max family reads each other's states) and otherwise leaves the observer empty and
 * returns false.
 */
export function loadObserverState(observer: ObserverV1, state: ObserverState): boolean {
  const own = observer.state();
  if (state.observer === own.observer && state.version === own.version) {
    observer.load(state);
    return true;
  }
  try {
    observer.load(state);
    return true;
  } catch (e) {
    if (!(e instanceof StateVersionError)) throw e;
    observer.reset();
    return false;
  }
}

/**
 * Starts an observer that has no statistics from `scale` (one per channel): the symmetric range
 * ±scale·(quantMax − quantMin)/2, from which the scale rule gives back exactly `scale`. False for
 * observers that cannot take a range (the histogram ones: they start from the next data).
 */
export function seedObserverFromScale(
  observer: ObserverV1,
  scale: ArrayLike<number>,
  quantMin: number,
  quantMax: number,
): boolean {
  if (!canSeedRange(observer)) return false;
  const half = (quantMax - quantMin) / 2;
  const max = Array.from(scale, (s) => s * half);
  observer.setRange(
    max.map((m) => -m),
    max,
  );
  return true;
}
