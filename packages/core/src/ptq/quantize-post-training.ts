// Post-training quantization in one call: the flow horizon_plugin_pytorch's calibration guide walks through by
// hand (a calibration qconfig, prepare_qat_fx, the CALIBRATION state and forward passes, convert_fx), with the
// hooks the CLI, the web app and the demo need to report it in their own words.
import { getDefaultQconfig } from '@qtk/fake-quant';
import type { GraphModule } from '@qtk/ir';
import type { Module } from '@qtk/nn';
import { InvalidArgumentError } from '@qtk/tensor';
import { QConfigError, type MarchBackendV1 } from '@qtk/spec';
import {
  type CalibrateOptions,
  type CalibrationBatch,
  type CalibrationBatchRunner,
  calibrate,
  calibrateAsync,
} from '../calibration.js';
import { convertFx } from '../convert-fx.js';
import type { HybridDict } from '../deploy-device.js';
import { type PrepareQatFxOptions, prepareQatFx } from '../prepare-qat-fx.js';
import { adaround, type AdaRoundOptions, type AdaRoundResult } from './adaround.js';
import { type BiasCorrectionResult, correctBias } from './bias-correction.js';
import { correctBiasAnalytic } from './bias-correction-analytic.js';
import type { QConfigDict } from '../qconfig-dict.js';

/** The stages of post-training quantization, in order. */
export type PostTrainingStage = 'prepare' | 'calibrate' | 'convert';

/**
 * The activation observer of the default calibration qconfig when neither `qconfig` nor `observer` is given (and
 * `qtk quantize`'s default): chosen from measurements on five networks and both marches, where it stayed closest to
 * float and to PyTorch FX's best observer (docs/ptq-accuracy.md, docs/decisions.md).
 */
export const DEFAULT_PTQ_OBSERVER = 'mix';

export interface PostTrainingOptions<Batches = Iterable<CalibrationBatch>> {
  /** The target march: a registered id or a backend. */
  march: string | MarchBackendV1;
  /** The qconfig dict to prepare with; default: `{ global }` of `observer`'s calibration qconfig. */
  qconfig?: QConfigDict;
  /**
   * The activation observer of the default qconfig (weights: per-channel min_max), by registered name;
   * default 'min_max'. Not together with `qconfig`.
   */
  observer?: string;
  /** The calibration inputs: each batch is the model's input, or one tensor per input. */
  calibration: Batches;
  /** Called after each calibration batch with its index (progress). */
  onBatch?: (index: number) => void;
  /** Called as each stage starts (progress lines). */
  onStage?: (stage: PostTrainingStage) => void;
  /**
   * Receives every warning with the stage that gave it; default: console.warn. The warnings are also
   * in the result.
   */
  onWarning?: (message: string, stage: PostTrainingStage) => void;
  /** Called between calibration and conversion, with the calibrated model and the number of batches it saw. */
  afterCalibrate?: (calibrated: GraphModule, batches: number) => void;
  /**
   * Turns an error of a stage into the one to throw (a caller's own wording: command-line flags, a button to
   * tick); `calibrated` is the prepared model once prepare succeeded. Default: the error as it is; a
   * conversion that fails on operators the march cannot run is a `ConversionError` that says to prepare
   * with `hybrid: true`.
   */
  explainError?: (error: unknown, at: { stage: PostTrainingStage; calibrated: GraphModule | null }) => unknown;
  /** prepareQatFx's `inputQuantStubs`: a QuantStub after every graph input, with a fixed scale or calibrated. */
  inputQuantStubs?: PrepareQatFxOptions['inputQuantStubs'];
  /** prepareQatFx's `outputDeQuantStubs`. */
  outputDeQuantStubs?: boolean;
  /** prepareQatFx's `fuse` (false: the model is fused already). */
  fuse?: boolean;
  /** A heterogeneous model: what the march cannot run stays float on the CPU (prepareQatFx's `hybrid`). */
  hybrid?: boolean;
  /** With `hybrid`: the pass that puts each node on the BPU or the CPU (`hybridPartitioner` from @qtk/hybrid). */
  partitioner?: PrepareQatFxOptions['partitioner'];
  /** With `hybrid`: modules to keep on the CPU. */
  hybridDict?: HybridDict;
  /** prepareQatFx's `passes`. */
  passes?: PrepareQatFxOptions['passes'];
  /**
   * After calibration, corrects every conv and linear bias for its quantized weight's mean error on the calibration
   * batches (correctBias), so they are run a second time: `calibration` must be iterable again (an array, or
   * batchesOf's result; not a generator, nor asynchronous). `'analytic'` derives each layer's input mean from the
   * BatchNorm absorbed before it instead (correctBiasAnalytic: no data run; layers without one are left as they
   * are). Default false.
   */
  biasCorrection?: boolean | 'empirical' | 'analytic';
  /**
   * After calibration (before bias correction), learns each conv and linear weight's rounding on the calibration
   * batches (adaround; true for its defaults), which runs them again once per layer: `calibration` must be
   * iterable again, as for `biasCorrection`. Default false.
   */
  adaround?: boolean | AdaRoundOptions;
}

/** AdaRound, then bias correction, on the calibration batches when asked for, within the calibrate stage. */
function refineAfterCalibration(
  run: PtqRun,
  calibrated: GraphModule,
  options: Pick<PostTrainingOptions, 'biasCorrection' | 'adaround'> & { calibration: unknown },
): void {
  const { adaround: ada, biasCorrection } = options;
  if (biasCorrection === 'analytic' && !ada) {
    run.refinements.biasCorrection = run.stage('calibrate', () => correctBiasAnalytic(calibrated));
    return;
  }
  if (!ada && !biasCorrection) return;
  const batches = options.calibration as Iterable<CalibrationBatch> | AsyncIterable<CalibrationBatch>;
  if (!(Symbol.iterator in batches))
    throw new InvalidArgumentError(
      `quantizePostTraining: ${ada ? 'adaround' : 'biasCorrection'} runs the calibration batches again; give them as an array (or batchesOf), not asynchronously`,
    );
  if (ada)
    run.refinements.adaround = run.stage('calibrate', () => adaround(calibrated, batches, ada === true ? {} : ada));
  if (biasCorrection)
    run.refinements.biasCorrection = run.stage('calibrate', () =>
      biasCorrection === 'analytic' ? correctBiasAnalytic(calibrated) : correctBias(calibrated, batches),
    );
}

/** quantizePostTrainingAsync's options: batches may arrive asynchronously, and another engine may run them. */
export interface AsyncPostTrainingOptions
  extends PostTrainingOptions<AsyncIterable<CalibrationBatch> | Iterable<CalibrationBatch>> {
  /**
   * Runs the calibration batches through the prepared model in another engine (`runtimeCalibration` of
   * @qtk/onnx-deploy: onnxruntime); default: QTK's own forward.
   */
  calibrationEngine?: (prepared: GraphModule) => CalibrationBatchRunner;
}

export interface CalibratedResult {
  /** The prepared model after calibration, its fake-quants in VALIDATION state. */
  readonly calibrated: GraphModule;
  /** How many calibration batches ran. */
  readonly batches: number;
  /** Every warning of the run, in order. */
  readonly warnings: readonly string[];
  /** What AdaRound did, when it ran. */
  readonly adaround?: AdaRoundResult;
  /** What bias correction did, when it ran. */
  readonly biasCorrection?: BiasCorrectionResult;
}

export interface PostTrainingResult extends CalibratedResult {
  /** The march's fixed-point model converted from `calibrated`. */
  readonly fixed: GraphModule;
}

/**
 * Post-training quantization: prepares `model` for the march with the calibration qconfig, calibrates it on
 * `calibration` and converts it to the march's fixed point. Errors pass through `explainError`.
 */
export function quantizePostTraining(model: Module, options: PostTrainingOptions): PostTrainingResult {
  const run = new PtqRun(options);
  const { calibrated, batches } = prepareAndCalibrate(run, model, options);
  return { calibrated, fixed: run.convert(calibrated), batches, warnings: run.warnings, ...run.refinements };
}

/** quantizePostTraining for calibration batches that arrive asynchronously. */
export async function quantizePostTrainingAsync(
  model: Module,
  options: AsyncPostTrainingOptions,
): Promise<PostTrainingResult> {
  const run = new PtqRun(options);
  const calibrated = run.prepare(model);
  options.onStage?.('calibrate');
  let batches: number;
  try {
    const runBatch = options.calibrationEngine?.(calibrated);
    batches = await calibrateAsync(calibrated, options.calibration, {
      ...run.calibrateOptions(),
      ...(runBatch ? { runBatch } : {}),
    });
  } catch (e) {
    throw run.explain(e, 'calibrate');
  }
  refineAfterCalibration(run, calibrated, options);
  options.afterCalibrate?.(calibrated, batches);
  return { calibrated, fixed: run.convert(calibrated), batches, warnings: run.warnings, ...run.refinements };
}

/**
 * The first half of quantizePostTraining: prepare and calibrate, no conversion (to start QAT from the
 * calibrated scales, or to convert later).
 */
export function calibratePostTraining(model: Module, options: PostTrainingOptions): CalibratedResult {
  const run = new PtqRun(options);
  return { ...prepareAndCalibrate(run, model, options), warnings: run.warnings, ...run.refinements };
}

function prepareAndCalibrate(
  run: PtqRun,
  model: Module,
  options: PostTrainingOptions,
): { calibrated: GraphModule; batches: number } {
  const calibrated = run.prepare(model);
  const batches = run.stage('calibrate', () => calibrate(calibrated, options.calibration, run.calibrateOptions()));
  refineAfterCalibration(run, calibrated, options);
  options.afterCalibrate?.(calibrated, batches);
  return { calibrated, batches };
}

/** The calibration qconfig dict of the options: `qconfig`, or the default one of `observer`. */
export function calibrationQconfigDict(options: Pick<PostTrainingOptions, 'qconfig' | 'observer'>): QConfigDict {
  if (options.qconfig && options.observer !== undefined) {
    throw new QConfigError(
      `quantizePostTraining: got both a qconfig and observer '${options.observer}'; ` +
        'pass one: the observer only chooses the default qconfig, so set it in your qconfig instead',
    );
  }
  return (
    options.qconfig ?? {
      global: getDefaultQconfig('fake_quant', 'fake_quant', options.observer ?? DEFAULT_PTQ_OBSERVER, 'min_max'),
    }
  );
}

/** One run's stages, warnings and error translation. */
class PtqRun {
  readonly warnings: string[] = [];
  readonly refinements: { adaround?: AdaRoundResult; biasCorrection?: BiasCorrectionResult } = {};
  private calibrated: GraphModule | null = null;

  constructor(private readonly options: PostTrainingOptions<unknown>) {}

  prepare(model: Module): GraphModule {
    const o = this.options;
    this.calibrated = this.stage('prepare', () =>
      prepareQatFx(model, calibrationQconfigDict(o), {
        march: o.march,
        onWarning: this.warn('prepare'),
        ...(o.inputQuantStubs !== undefined ? { inputQuantStubs: o.inputQuantStubs } : {}),
        ...(o.outputDeQuantStubs !== undefined ? { outputDeQuantStubs: o.outputDeQuantStubs } : {}),
        ...(o.fuse !== undefined ? { fuse: o.fuse } : {}),
        ...(o.passes !== undefined ? { passes: o.passes } : {}),
        ...(o.hybrid !== undefined ? { hybrid: o.hybrid } : {}),
        ...(o.partitioner !== undefined ? { partitioner: o.partitioner } : {}),
        ...(o.hybridDict !== undefined ? { hybridDict: o.hybridDict } : {}),
      }),
    );
    return this.calibrated;
  }

  calibrateOptions(): CalibrateOptions {
    return { onWarning: this.warn('calibrate'), ...(this.options.onBatch ? { onBatch: this.options.onBatch } : {}) };
  }

  convert(calibrated: GraphModule): GraphModule {
    return this.stage('convert', () =>
      convertFx(calibrated, { march: this.options.march, onWarning: this.warn('convert') }),
    );
  }

  stage<T>(stage: PostTrainingStage, f: () => T): T {
    this.options.onStage?.(stage);
    try {
      return f();
    } catch (e) {
      throw this.explain(e, stage);
    }
  }

  explain(e: unknown, stage: PostTrainingStage): unknown {
    return this.options.explainError ? this.options.explainError(e, { stage, calibrated: this.calibrated }) : e;
  }

  private warn(stage: PostTrainingStage): (message: string) => void {
    const sink = this.options.onWarning ?? ((m: string) => console.warn(`[qtk] ${m}`));
    return (message) => {
      this.warnings.push(message);
      sink(message, stage);
    };
  }
}
