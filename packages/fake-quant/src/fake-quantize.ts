import { Module, Parameter, type JsonValue } from '@qtk/nn';
import {
  FAKE_QUANT_STATES,
  FLOAT32_EPS,
  observerDTypeSchema,
  parseOptions,
  resolveQuantRange,
  type FakeQuantState,
  type FakeQuantV1,
  type ObserverV1,
  type QParams,
  type QuantDType,
  roundingModeSchema,
} from '@qtk/spec';
import { InvalidArgumentError, noGrad, Tensor, type RoundingMode } from '@qtk/tensor';
import { z } from 'zod';
import { fakeQuantize } from './fake-quant-op.js';
import { createNamedObserver } from './observer-factory.js';
import {
  FAKE_QUANTIZE_EXTRA_STATE_VERSION,
  loadObserverState,
  parseFakeQuantizeExtraState,
  seedObserverFromScale,
  type FakeQuantizeExtraState,
} from './observer-resume.js';
import { getDefaultRounding } from './rounding.js';
import { countClamped, SATURATION_WARNING_SHARE, type SaturationCount } from './saturation.js';

export const fakeQuantizeOptionsSchema = z
  .object({
    /** Registered observer name ('min_max', 'percentile', 'mse', 'kl', 'mix', 'fixed_scale', ...). */
    observer: z.string().min(1).default('min_max'),
    /** Options of the observer beyond the shared ones below (averagingConstant, percentile, bins, scale...). */
    observerOptions: z.record(z.unknown()).default({}),
    dtype: observerDTypeSchema.default('qint8'),
    /** -1 per tensor, >= 0 per channel along this axis. */
    chAxis: z.number().int().min(-1).default(-1),
    /** Channels of a per-channel scale (the size of `chAxis`), so the scale buffer exists before data. */
    numChannels: z.number().int().positive().default(1),
    quantMin: z.number().int().nullable().default(null),
    quantMax: z.number().int().nullable().default(null),
    /** null: the global default (half_up unless changed with setDefaultRounding). */
    rounding: roundingModeSchema.nullable().default(null),
    /** LSQ: the scale is a Parameter learned with the LSQ gradient, initialised from the observer. */
    learnable: z.boolean().default(false),
    /** Initial state. */
    state: z.enum(FAKE_QUANT_STATES).default('QAT'),
  })
  .strict();
export type FakeQuantizeOptions = z.input<typeof fakeQuantizeOptionsSchema>;
type Parsed = z.output<typeof fakeQuantizeOptionsSchema>;

/**
 * Fake quantization after horizon_plugin_pytorch's FakeQuantize and LSQ:
 * - CALIBRATION: the observer sees x, the output is x unchanged (horizon_plugin_pytorch's calibration);
 * - VALIDATION: the observer is frozen, the output is fake-quantized with the calibrated scale;
 * - QAT: the observer sees x (LSQ: only until the scale is initialised) and the output is
 *   fake-quantized, gradient straight-through (zero outside [qmin·s, qmax·s]); LSQ learns s.
 * The scale lives in the `scale` buffer (Parameter for LSQ) and the observer's statistics in the
 * module's extra state, so a state dict carries calibration and QAT resumes from it. An observer
 * without statistics of its own (the dict's were of another observer kind, or the dict has none)
 * starts from the calibrated scale when it can take a range (the min/max family).
 */
export class FakeQuantize extends Module implements FakeQuantV1 {
  readonly apiVersion = 1 as const;
  readonly options: Readonly<Parsed>;
  readonly observer: ObserverV1;
  readonly dtype: QuantDType;
  readonly quantMin: number;
  readonly quantMax: number;
  declare scale: Tensor;
  /** 1 once the scale holds an observed (or loaded) value; a buffer so it travels in state dicts. */
  declare initialized: Tensor;
  private state: FakeQuantState;
  /** Set while the observer has seen data the scale does not reflect yet (CALIBRATION defers the update). */
  private scaleStale = false;
  private clampCount: SaturationCount = { seen: 0, clamped: 0 };

  constructor(options: FakeQuantizeOptions = {}) {
    super();
    const o = parseOptions(fakeQuantizeOptionsSchema, options, 'FakeQuantize');
    this.options = o;
    this.dtype = o.dtype;
    this.observer = createNamedObserver(o.observer, {
      ...o.observerOptions,
      dtype: o.dtype,
      chAxis: o.chAxis,
      quantMin: o.quantMin,
      quantMax: o.quantMax,
    });
    // the observer's resolved range (its reduceRange narrows it), so scale and clamp agree
    const range = resolveQuantRange(
      o.dtype,
      this.observer.options.quantMin ?? o.quantMin,
      this.observer.options.quantMax ?? o.quantMax,
    );
    this.quantMin = range.quantMin;
    this.quantMax = range.quantMax;
    const n = o.chAxis >= 0 ? o.numChannels : 1;
    const init = new Tensor({ data: new Float32Array(n).fill(1), shape: [n], dtype: 'float32' });
    if (o.learnable) this.registerParameter('scale', new Parameter(init));
    else this.registerBuffer('scale', init);
    this.registerBuffer('initialized', new Tensor({ data: Float32Array.of(0), shape: [1], dtype: 'float32' }));
    deferScaleReads(this);
    this.state = o.state;
    if (o.observer === 'fixed_scale') this.updateScaleFromObserver();
  }

  get kind(): string {
    return this.options.learnable ? 'lsq' : 'fake_quantize';
  }

  get fakeQuantState(): FakeQuantState {
    return this.state;
  }

  setFakeQuantState(state: FakeQuantState): void {
    if (!FAKE_QUANT_STATES.includes(state)) {
      throw new InvalidArgumentError(
        `FakeQuantize.setFakeQuantState: unknown state '${String(state)}'; use one of ${FAKE_QUANT_STATES.join(', ')}`,
      );
    }
    this.syncScale();
    this.state = state;
  }

  get rounding(): RoundingMode {
    return this.options.rounding ?? getDefaultRounding();
  }

  get isInitialized(): boolean {
    return this.initialized.values()[0] === 1;
  }

  forward(x: Tensor): Tensor {
    if (this.state === 'CALIBRATION') {
      // The scale is computed from the observer when next read (a histogram search per batch adds up).
      this.observe(x, { deferScale: true });
      if (this.hasFixedScale) this.countSaturation(x);
      return x;
    }
    if (this.state === 'QAT' && !(this.options.learnable && this.isInitialized)) this.observe(x);
    if (!this.isInitialized) {
      // VALIDATION (or LSQ) without any calibration: take the scale from this input once
      this.observe(x);
    }
    return this.quantized(x);
  }

  private quantized(x: Tensor): Tensor {
    return fakeQuantize(x, this.scale, {
      quantMin: this.quantMin,
      quantMax: this.quantMax,
      chAxis: this.options.chAxis,
      rounding: this.rounding,
      gradScale: this.options.learnable ? 1 / Math.sqrt((x.size / this.scale.size) * this.quantMax) : 1,
    });
  }

  /**
   * Fake-quantizes a value tied to this fake-quant's scale without observing it (a cat's inputs
   * with the cat's scale, where a march asks for it): the identity while calibrating and before a scale was observed, else the same
   * rounding and clamping as forward. A graph calls it as `call_module` with this method name.
   */
  applyWithoutObserving(x: Tensor): Tensor {
    if (this.state === 'CALIBRATION' || !this.isInitialized) return x;
    return this.quantized(x);
  }

  /** Whether the scale is set, not observed (the 'fixed_scale' observer, e.g. a QuantStub given a scale). */
  get hasFixedScale(): boolean {
    return this.options.observer === 'fixed_scale';
  }

  /** With a fixed scale: the values seen in CALIBRATION and how many of them clamping changed; else null. */
  get saturation(): SaturationCount | null {
    return this.hasFixedScale ? this.clampCount : null;
  }

  private countSaturation(x: Tensor): void {
    const { seen, clamped } = countClamped(x, this.scale.values(), this.options.chAxis, this.quantMin, this.quantMax);
    this.clampCount = { seen: this.clampCount.seen + seen, clamped: this.clampCount.clamped + clamped };
  }

  /**
   * Whether a calibration batch can be given to this fake-quant as its range alone (observeRange): its observer
   * keeps only per-tensor minima and maxima, and it has no fixed scale whose clamping it counts.
   */
  get observesRange(): boolean {
    return !this.hasFixedScale && this.observer.observeRange !== undefined && this.observer.options.chAxis < 0;
  }

  /**
   * CALIBRATION's observation of a batch given by its smallest and largest value (observesRange must hold): the
   * same as forward() of the batch, for an engine that reduces the value in its own runtime.
   */
  observeRange(min: number, max: number): void {
    if (!this.observesRange || this.state !== 'CALIBRATION')
      throw new InvalidArgumentError(
        `FakeQuantize: observeRange needs the CALIBRATION state and a per-tensor min-max observer (state ${this.state}, observer '${this.options.observer}')`,
      );
    this.resumeFromScale();
    this.observer.observeRange!(min, max);
    this.afterObserving({ deferScale: true });
  }

  private observe(x: Tensor, options: { deferScale?: boolean } = {}): void {
    const d = noGrad(() => x.detach());
    this.resumeFromScale();
    this.observer.observe(d);
    this.afterObserving(options);
  }

  private afterObserving(options: { deferScale?: boolean }): void {
    if (!this.observer.hasData()) return;
    if (options.deferScale) {
      this.scaleStale = true;
      this.initialized.data[this.initialized.offset] = 1;
    } else this.updateScaleFromObserver();
  }

  /** Brings the scale up to date with what the observer saw (after deferred CALIBRATION updates). */
  syncScale(): void {
    if (this.scaleStale) this.updateScaleFromObserver();
  }

  private updateScaleFromObserver(): void {
    this.scaleStale = false;
    const s = this.observer.computeQparams().scale;
    const scale = scaleStore(this);
    if (s.length !== scale.size) {
      throw new InvalidArgumentError(
        `FakeQuantize: the observer gave ${s.length} scale(s) but the scale buffer holds ${scale.size}; set numChannels to the size of axis ${this.options.chAxis}`,
      );
    }
    scale.data.set(s, scale.offset);
    this.initialized.data[this.initialized.offset] = 1;
  }

  /** Continue from the held scale, not from the next batch, when it was loaded without statistics. */
  private resumeFromScale(): void {
    if (this.isInitialized && !this.observer.hasData())
      seedObserverFromScale(this.observer, this.scale.values(), this.quantMin, this.quantMax);
  }

  /** The observer's statistics, so a loaded state dict resumes calibration or QAT where it stopped. */
  override extraState(): JsonValue {
    const state: FakeQuantizeExtraState = {
      version: FAKE_QUANTIZE_EXTRA_STATE_VERSION,
      observer: this.observer.state(),
    };
    return state as unknown as JsonValue;
  }

  /**
   * Loads the observer's statistics (called after the scale is loaded). Statistics this observer
   * cannot read (another kind, e.g. calibrated with 'kl' and trained with 'min_max') are not an
   * error: the observer then starts from the loaded scale instead.
   */
  override loadExtraState(state: JsonValue): void {
    loadObserverState(this.observer, parseFakeQuantizeExtraState(state));
    this.resumeFromScale();
  }

  /**
   * Why the scale does not describe the data, or null: after calibration, 'no finite value' (the
   * observer saw no data or only NaN, so the scale is still the placeholder 1.0) or 'only zeros'
   * (every channel's range is [0, 0] or too close to it, so the scale sits at the float32 epsilon
   * floor and larger values saturate); with a fixed scale, 'clamped' when more than
   * SATURATION_WARNING_SHARE of the calibration values lie beyond its range (inputs not normalised).
   */
  calibrationIssue(): string | null {
    this.syncScale();
    if (!this.isInitialized) return 'saw no finite value (no data, or only NaN): its scale is the placeholder 1.0';
    const { seen, clamped } = this.clampCount;
    if (this.hasFixedScale && seen > 0 && clamped / seen > SATURATION_WARNING_SHARE) {
      const s = this.scale.values();
      const range =
        s.length === 1
          ? `[${this.quantMin * s[0]!}, ${this.quantMax * s[0]!}] (fixed scale ${s[0]})`
          : 'its range (fixed per-channel scales)';
      return (
        `clamped ${((100 * clamped) / seen).toFixed(1)} % of the values it saw (${clamped} of ${seen} lie beyond ${range}): ` +
        'the data does not fit the fixed scale; normalise it to the range, or give it a scale that fits (or an observer)'
      );
    }
    const s = this.scale.values();
    let zero = true;
    for (let i = 0; i < s.length; i++) {
      if (!Number.isFinite(s[i]!)) return `has a non-finite scale (${s[i]})`;
      if (s[i]! > Math.fround(FLOAT32_EPS)) zero = false;
    }
    return zero
      ? 'saw only zeros (or values too close to zero for its dtype): its scale is the float32 epsilon floor, so larger values saturate'
      : null;
  }

  calculateQparams(): QParams {
    return {
      scale: Float32Array.from(this.scale.values()),
      zeroPoint: 0,
      dtype: this.dtype,
      quantMin: this.quantMin,
      quantMax: this.quantMax,
      chAxis: this.options.chAxis,
    };
  }

  override extraRepr(): string {
    return `kind=${this.kind}, observer=${this.options.observer}, dtype=${this.dtype}, chAxis=${this.options.chAxis}, state=${this.state}`;
  }
}

const SCALE_STORE = '_scaleStore';

/** The scale tensor itself, without bringing it up to date. */
function scaleStore(fq: FakeQuantize): Tensor {
  return (fq as unknown as Record<string, Tensor>)[SCALE_STORE]!;
}

/**
 * Turns the registered `scale` (buffer, or Parameter for LSQ) into an accessor that syncs it with the
 * observer before every read, so a deferred CALIBRATION update is never seen stale: by the state dict,
 * conversion, or a user reading `fq.scale`. The accessor keeps the property's place among the module's
 * fields; its functions use `this`, so deepCopy and the fusion's shallow clones (which copy property
 * descriptors) give each copy its own scale, held in a non-enumerable field that they copy too.
 */
function deferScaleReads(fq: FakeQuantize): void {
  Object.defineProperty(fq, SCALE_STORE, { value: fq.scale, writable: true, enumerable: false, configurable: true });
  Object.defineProperty(fq, 'scale', {
    get(this: FakeQuantize): Tensor {
      this.syncScale();
      return scaleStore(this);
    },
    set(this: FakeQuantize, t: Tensor) {
      (this as unknown as Record<string, Tensor>)[SCALE_STORE] = t;
    },
    enumerable: true,
    configurable: true,
  });
}
