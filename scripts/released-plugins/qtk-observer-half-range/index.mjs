// A third-party observer built against QTK 0.1.0's plugin contract (ObserverV1 in a QtkPluginV1): it clips at half
// the largest |x| seen. scripts/check-released-plugins.mjs loads it into the packed release.
import { observerOptionsSchema, parseOptions, resolveQuantRange, scaleFromRange, StateVersionError } from '@qtk/spec';

const optionsSchema = observerOptionsSchema({});

class HalfRangeObserver {
  apiVersion = 1;
  name = 'half_range';
  absMax = 0;
  constructor(options = {}) {
    this.options = parseOptions(optionsSchema, options, "observer 'half_range'");
  }
  observe(x) {
    for (const v of x.values()) this.absMax = Math.max(this.absMax, Math.abs(v));
  }
  hasData() {
    return this.absMax > 0;
  }
  computeQparams() {
    const r = resolveQuantRange(this.options.dtype, this.options.quantMin, this.options.quantMax);
    const c = this.absMax / 2;
    return {
      scale: Float32Array.of(scaleFromRange(-c, c, r)),
      zeroPoint: 0,
      dtype: this.options.dtype,
      ...r,
      chAxis: -1,
    };
  }
  state() {
    return { observer: this.name, version: 1, stats: { absMax: this.absMax } };
  }
  load(state) {
    if (state.observer !== this.name || state.version !== 1) throw new StateVersionError('half_range cannot read it');
    this.absMax = state.stats.absMax;
  }
  merge(state) {
    this.absMax = Math.max(this.absMax, state.stats.absMax);
  }
  reset() {
    this.absMax = 0;
  }
}

export const qtkPlugin = {
  apiVersion: 1,
  name: 'qtk-observer-half-range',
  observers: [{ apiVersion: 1, name: 'half_range', optionsSchema, create: (o) => new HalfRangeObserver(o) }],
};
