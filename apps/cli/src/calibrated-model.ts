// The part of `qtk quantize` that `qtk profile` and `qtk sensitivity` share: read an ONNX model and its
// calibration samples, prepare it for a march (optionally heterogeneous), calibrate, convert.
import {
  type AdaRoundOptions,
  type AdaRoundResult,
  type BiasCorrectionResult,
  ConversionError,
  DEFAULT_PTQ_OBSERVER,
  equalizeCrossLayer,
  quantizePostTrainingAsync,
  UnknownModuleNameError,
} from '@qtk/core';
import { FakeQuantize, getDefaultQconfig } from '@qtk/fake-quant';
import type { GraphModule } from '@qtk/ir';
import type { OnnxGraphModule } from '@qtk/onnx';
import { runtimeCalibration } from '@qtk/onnx-deploy';
import type { Tensor } from '@qtk/tensor';
import { parseNumber, type CommandSpec } from './args.js';
import { inputBatches } from './batches.js';
import { loadInputSamples } from './data/input-samples.js';
import type { Preprocess } from './data/samples.js';
import { HybridDictError, hybridPartitioner } from '@qtk/hybrid';
import { hybridDictFrom, splitNames } from './hybrid-options.js';
import { conversionAdvice } from './conversion-advice.js';
import { CliError, type CliIo, usageError } from './io.js';
import { INPUT_SHAPE_OPTION, inputShapeOption, loadOnnx, MAX_ELEMENTS_OPTION } from './model-input.js';
import { ModelNames } from './model-names.js';
import { PREPROCESS_OPTIONS, preprocessFrom } from './preprocess-options.js';
import { requireMarch, requireObserver } from './registry-names.js';
import { type CalibrateQconfig, calibrateQconfig, QCONFIG_OPTIONS, unknownEntryError } from './qconfig-options.js';
import { engineOption } from './model-runner.js';
import { loadOrt } from './ort-session.js';
import { modelInputs, type SampleInput, sampleShapesText } from './sample-inputs.js';
import { stepProgress } from './progress.js';

/** The options of a command that calibrates and converts an ONNX model. */
export const CALIBRATE_OPTIONS: CommandSpec['options'] = {
  calib: {
    type: 'string',
    value: 'DIR',
    description:
      'calibration samples: .npy tensors and/or PNG/JPEG images; for a model with several inputs, one sub-folder DIR/<input>/ (or one DIR/<input>.npy batch) per input (required)',
  },
  march: {
    type: 'string',
    value: 'ID',
    description: 'the march to convert for (bayes, bernoulli2)',
    default: 'bayes',
  },
  observer: {
    type: 'string',
    value: 'NAME',
    description: 'activation observer (mix, mse, min_max, percentile, kl, ...); weights use per-channel min_max',
    default: DEFAULT_PTQ_OBSERVER,
  },
  ...INPUT_SHAPE_OPTION,
  'input-scale': {
    type: 'string',
    value: 'S|auto',
    description: "the input quantization scale ('1/128' suits inputs in [-1, 1]; 'auto' calibrates it)",
    default: '1/128',
  },
  batch: { type: 'number', value: 'N', description: 'calibration batch size', default: 32, integer: true, min: 1 },
  ...engineOption(
    "where calibration's forward passes run: onnxruntime-node (ort) or QTK's kernels (qtk); auto: onnxruntime-node, and QTK for a model it cannot run, saying why",
  ),
  'calib-limit': {
    type: 'number',
    value: 'N',
    description: 'calibrate on at most N samples',
    integer: true,
    min: 1,
  },
  limit: {
    type: 'number',
    value: 'N',
    description: 'old spelling of --calib-limit (deprecated)',
    integer: true,
    min: 1,
    replacedBy: 'calib-limit',
  },
  equalize: {
    type: 'boolean',
    description:
      'cross-layer equalization before calibration: equal weight ranges across conv/linear pairs joined by a ReLU (for per-tensor weights)',
  },
  'bias-correction': {
    type: 'boolean',
    description:
      "after calibration, correct each conv and linear bias for its quantized weight's mean error on the calibration samples",
  },
  'analytic-bias-correction': {
    type: 'boolean',
    description:
      'after calibration, correct each conv and linear bias from the statistics of the BatchNorm before it (no data; other layers keep theirs)',
  },
  adaround: {
    type: 'boolean',
    description:
      "after calibration, learn each conv and linear weight's rounding (up or down) so its output on the calibration samples stays closest to the float layer's (AdaRound)",
  },
  'adaround-iters': {
    type: 'number',
    value: 'N',
    description: 'with --adaround: optimizer steps per layer (default 1000)',
    integer: true,
    min: 1,
  },
  'skip-nonfinite': {
    type: 'boolean',
    description: 'leave out calibration samples holding NaN or ±Infinity (counted in the summary) instead of failing',
  },
  hybrid: {
    type: 'boolean',
    description:
      'heterogeneous model: operators the march cannot run stay float on the CPU, with quantize / dequantize where they meet the BPU',
  },
  'cpu-ops': {
    type: 'string',
    value: 'OP[,OP...]',
    description: 'with --hybrid: also run every node of these operators on the CPU (names as qtk inspect prints them)',
  },
  'cpu-nodes': {
    type: 'string',
    value: 'NAME[,NAME...]',
    description: 'with --hybrid: also run these nodes (module names, as qtk inspect prints them) on the CPU',
  },
  ...QCONFIG_OPTIONS,
  ...PREPROCESS_OPTIONS,
  ...MAX_ELEMENTS_OPTION,
};

export interface CalibratedModel {
  /** The imported float model. */
  readonly float: GraphModule;
  /** Prepared and calibrated (CALIBRATION state). */
  readonly prepared: GraphModule;
  /** Converted from `prepared`. */
  readonly fixed: GraphModule;
  /** The calibration samples: one [N, ...] tensor per model input. */
  readonly samples: Tensor[];
  /** The model's inputs (name, sample shape). */
  readonly inputs: SampleInput[];
  readonly preprocess: Preprocess;
  readonly march: string;
  readonly observer: string;
  readonly inputScale: number | 'auto';
  readonly hybrid: boolean;
  readonly cpuOps: string[];
  readonly cpuNodes: string[];
  readonly batches: number;
  /** Where calibration's forward passes ran: 'onnxruntime-node 1.30.0', 'qtk', or 'qtk (why not onnxruntime)'. */
  readonly calibrationEngine: string;
  /** With --equalize: how many layer pairs cross-layer equalization balanced; else null. */
  readonly equalizedPairs: number | null;
  /** With --adaround: what it did per layer; else null. */
  readonly adaround: AdaRoundResult | null;
  /** With --bias-correction or --analytic-bias-correction: the corrected and skipped layers; else null. */
  readonly biasCorrection: BiasCorrectionResult | null;
  readonly usedFiles: number;
  readonly warnings: string[];
  /** The qconfig dict prepared with: high-precision outputs, int16 nodes, float modules. */
  readonly qconfigs: CalibrateQconfig;
}

type Options = Record<string, unknown>;

/**
 * A calibration that fails at a batch other than the one the ONNX file declares: the model may compute its shapes for
 * its own batch (a Reshape to [1, ...]), so the error says which --batch to pass. Other errors pass through.
 */
function fixedBatchAdvice(e: unknown, float: OnnxGraphModule, batch: number, samples: number): unknown {
  const declared = float.inputSpecs[0]?.shape?.[0];
  const first = Math.min(batch, samples);
  if (e instanceof CliError || !(e instanceof Error) || typeof declared !== 'number' || declared === first) return e;
  return new CliError(
    `calibration failed at batch ${first}: ${e.message}\n` +
      `the model declares a batch of ${declared} (input '${float.inputSpecs[0]!.onnxName}'), and may compute its shapes for it: pass --batch ${declared}`,
    { cause: e },
  );
}

/** prepare's errors of unknown module names, with the model's closest names. */
function prepareAdvice(e: unknown, names: ModelNames, qconfigs: CalibrateQconfig, float: OnnxGraphModule): unknown {
  if (UnknownModuleNameError.isInstance(e))
    return names.withSuggestions(unknownEntryError(e, qconfigs.origin, float), e.entry);
  if (HybridDictError.isInstance(e) && e.key === 'moduleName') return names.withSuggestions(e, e.entry);
  return e;
}

/** A conversion failure in the CLI's terms: what to pass (--hybrid, --keep-float, --march) to get past it. */
function conversionFailure(
  e: unknown,
  modelPath: string,
  marchId: string,
  hybrid: boolean,
  prepared: GraphModule,
): unknown {
  if (ConversionError.isInstance(e) && e.failures.length > 0)
    return new CliError(conversionAdvice(e, modelPath, marchId, hybrid, prepared), { cause: e });
  if (ConversionError.isInstance(e))
    return new CliError(`cannot quantize ${modelPath} for '${marchId}': ${e.message}`, { cause: e });
  return e;
}

/** A first calibration batch smaller than this sets the scales almost alone (see the warning after calibrate). */
const SMALL_FIRST_BATCH = 8;

/** Reads --march / --observer / --batch / --input-scale, failing with exit code 2 on a bad value. */
export function checkCalibrateOptions(o: Options, command: string): void {
  if (o.calib === undefined) throw usageError(command, 'missing --calib DIR (the calibration samples)');
  requireMarch(String(o.march));
  requireObserver(String(o.observer));
  // --batch is checked by the option parser (an integer of at least 1)
  parseInputScale(String(o['input-scale']));
}

/**
 * Imports `modelPath`, loads --calib, prepares for --march (with --hybrid: a heterogeneous model;
 * `moduleName` entries such as --keep-float's), calibrates and converts.
 */
export async function calibrateOnnxModel(
  modelPath: string,
  o: Options,
  io: CliIo,
  extra: {
    /** Module names to keep float (--keep-float). */
    keepFloat?: readonly string[];
  } = {},
): Promise<CalibratedModel> {
  const marchId = requireMarch(String(o.march));
  const observer = requireObserver(String(o.observer));
  const batch = Number(o.batch);
  const inputScale = parseInputScale(String(o['input-scale']));
  const limit = o['calib-limit'] !== undefined ? Number(o['calib-limit']) : Infinity;
  // one line as each stage starts (import, calibration, conversion; qtk quantize adds writing)
  io.out(`${stageLabel('import')}${modelPath}\n`);
  const shapeOption = inputShapeOption(o);
  const float = loadOnnx(modelPath, { maxElements: o['max-elements'], inputShape: shapeOption });
  const inputs = modelInputs(float, shapeOption);
  const pre = preprocessFrom(o as never);
  const nonFinite = { skip: o['skip-nonfinite'] === true, hint: 'or pass --skip-nonfinite to leave such samples out' };
  const loaded = loadInputSamples(String(o.calib), inputs, { what: 'calibration', preprocess: pre, limit, nonFinite });
  const samples = loaded.tensors;
  const left = loaded.skipped ? `; ${loaded.skipped} sample(s) holding NaN or ±Infinity left out` : '';
  io.out(
    `${stageLabel('calibration')}${samples[0]!.shape[0]} samples of ${sampleShapesText(inputs, samples)} from ${loaded.files} file(s) in ${o.calib}${left}\n`,
  );
  const warnings: string[] = [];
  const onWarning = (m: string) => warnings.push(m);
  for (const [i, x] of samples.entries()) {
    const constant = constantValue(x);
    if (constant === null) continue;
    const which = samples.length > 1 ? ` of input '${inputs[i]!.name}'` : '';
    onWarning(
      `the calibration data${which} is constant (every value is ${constant}): the scales see a single value; calibrate on representative inputs`,
    );
  }
  const qconfig = getDefaultQconfig('fake_quant', 'fake_quant', observer, 'min_max');
  const hybrid = o.hybrid === true;
  const cpuOps = splitNames(o['cpu-ops']);
  const cpuNodes = splitNames(o['cpu-nodes']);
  if (!hybrid && (cpuOps.length || cpuNodes.length))
    throw new CliError('--cpu-ops and --cpu-nodes need --hybrid (a heterogeneous model)', { exitCode: 2 });
  if (o['bias-correction'] === true && o['analytic-bias-correction'] === true)
    throw new CliError('--bias-correction and --analytic-bias-correction are two forms of one correction: give one', {
      exitCode: 2,
    });
  if (o['adaround-iters'] !== undefined && o.adaround !== true)
    throw new CliError('--adaround-iters needs --adaround', { exitCode: 2 });
  // names may be QTK's, ONNX node names or PyTorch module paths; unknown ones reach prepare, which names them
  const names = new ModelNames(float);
  const hybridDict = hybrid ? hybridDictFrom(float, cpuOps, names.resolveAll(cpuNodes)) : undefined;
  const qconfigs = calibrateQconfig(float, o, {
    march: marchId,
    global: qconfig,
    hybrid,
    ...(hybridDict ? { hybridDict } : {}),
    ...(extra.keepFloat ? { keepFloat: names.resolveAll(extra.keepFloat) } : {}),
  });
  const firstBatch = Math.min(batch, samples[0]!.shape[0]!);
  const engine = await calibrationEngine(String(o.engine), samples[0]!.shape[0]!);
  const equalized = o.equalize === true ? equalizeCrossLayer(float, { march: marchId }) : null;
  const {
    calibrated: prepared,
    fixed,
    batches: nBatches,
    adaround: rounding,
    biasCorrection: corrected,
  } = await quantizePostTrainingAsync(equalized?.model ?? float, {
    ...(engine.run ? { calibrationEngine: engine.run } : {}),
    march: marchId,
    qconfig: qconfigs.dict,
    // bias correction and AdaRound run the calibration batches again
    calibration: o['bias-correction'] || o.adaround ? [...inputBatches(samples, batch)] : inputBatches(samples, batch),
    ...(o['bias-correction'] ? { biasCorrection: true } : {}),
    ...(o['analytic-bias-correction'] ? { biasCorrection: 'analytic' as const } : {}),
    ...(o.adaround ? { adaround: adaroundOptions(o, io) } : {}),
    inputQuantStubs: inputScale === 'auto' ? true : { scale: inputScale },
    outputDeQuantStubs: false, // the model file keeps integer outputs; qtk export records their scales
    ...(hybrid ? { hybrid, partitioner: hybridPartitioner, ...(hybridDict ? { hybridDict } : {}) } : {}),
    onWarning,
    afterCalibrate: (calibrated, n) => {
      if (n > 1 && firstBatch < SMALL_FIRST_BATCH)
        onWarning(
          `calibration: the observers move their ranges 1 % toward each later batch (averagingConstant 0.01, horizon_plugin_pytorch's default), ` +
            `so with batches of ${firstBatch} sample(s) the first ${firstBatch === 1 ? 'sample decides' : 'samples decide'} most of every scale; ` +
            'calibrate with a larger --batch',
        );
      if (inputScale !== 'auto') hintInputScale(calibrated, warnings, String(o['input-scale']));
    },
    onStage: (stage) => {
      if (stage === 'convert') io.out(`${stageLabel('conversion')}to fixed point for ${marchId}\n`);
    },
    explainError: (e, { stage, calibrated }) => {
      if (stage === 'prepare') return prepareAdvice(e, names, qconfigs, float);
      if (stage === 'calibrate') return fixedBatchAdvice(e, float, batch, samples[0]!.shape[0]!);
      return conversionFailure(e, modelPath, marchId, hybrid, calibrated!);
    },
  });
  return {
    float,
    prepared,
    fixed,
    samples,
    inputs,
    preprocess: pre,
    march: marchId,
    observer,
    inputScale,
    hybrid,
    cpuOps,
    cpuNodes,
    batches: nBatches,
    calibrationEngine: engine.used(),
    equalizedPairs: equalized ? equalized.pairs.length : null,
    adaround: rounding ?? null,
    biasCorrection: corrected ?? null,
    usedFiles: loaded.files,
    warnings,
    qconfigs,
  };
}

/**
 * Calibration sets smaller than this run in QTK under --engine auto: onnxruntime's set-up (the export walk and the
 * check, each a QTK forward of two samples, and the session) costs about as much as QTK's forward of 8 to 10
 * samples (MobileNetV2 at 224²: 1.3 s against 1.15 s for 8 samples in QTK, then 0.27 s per 4 samples in onnxruntime).
 */
export const MIN_RUNTIME_CALIBRATION_SAMPLES = 16;

/**
 * --engine's calibration engine: onnxruntime-node's forward passes (ort; auto for at least
 * MIN_RUNTIME_CALIBRATION_SAMPLES samples, falling back to QTK's and saying why in `used`), or none for QTK's own
 * (qtk). With ort, a model onnxruntime cannot run is an error naming the reason.
 */
async function calibrationEngine(
  choice: string,
  samples: number,
): Promise<{ run?: ReturnType<typeof runtimeCalibration>; used(): string }> {
  if (choice === 'qtk') return { used: () => 'qtk' };
  if (choice === 'auto' && samples < MIN_RUNTIME_CALIBRATION_SAMPLES)
    return {
      used: () =>
        `qtk (${samples} sample(s): onnxruntime-node pays for its set-up from ${MIN_RUNTIME_CALIBRATION_SAMPLES})`,
    };
  let ort: Awaited<ReturnType<typeof loadOrt>>;
  try {
    ort = await loadOrt();
  } catch (e) {
    if (choice === 'ort') throw e;
    const why = (e as Error).message;
    return { used: () => `qtk (${why})` };
  }
  let fallback: string | null = null;
  const run = runtimeCalibration(ort, {
    onFallback: (reason) => {
      if (choice === 'ort')
        throw new CliError(
          `--engine ort: calibration cannot run in onnxruntime-node: ${reason}; pass --engine qtk or auto`,
        );
      fallback = reason;
    },
  });
  const version = `onnxruntime-node ${ort.env.versions.node ?? '?'}`;
  return { run, used: () => (fallback === null ? version : `qtk (${version}: ${fallback})`) };
}

/** The start of a stage's progress line ('calibration: '), the labels aligned. */
export function stageLabel(stage: 'import' | 'calibration' | 'conversion' | 'writing'): string {
  return `${stage}:`.padEnd(13);
}

/**
 * Adds what to do to calibrate's report of an input stub that clamped the samples (its fixed scale is
 * --input-scale's): they are not normalised as the scale expects.
 */
function hintInputScale(prepared: GraphModule, warnings: string[], scaleText: string): void {
  for (const [name, m] of prepared.namedModules()) {
    if (!(m instanceof FakeQuantize) || !m.saturation || !name.startsWith('_generated_quant_stub_')) continue;
    const i = warnings.findIndex((w) => w.includes(`'${name}' clamped`));
    if (i < 0) continue;
    warnings[i] +=
      `\n    the calibration samples do not fit --input-scale ${scaleText}: normalise them ` +
      '(images: --mean/--std; .npy samples: scale them to [-1, 1] yourself) or pass --input-scale auto';
  }
}

/** The one value every element of `x` holds, or null when the data varies. */
function constantValue(x: Tensor): number | null {
  const v = x.values();
  const first = v[0] as number;
  for (let i = 1; i < v.length; i++) if (v[i] !== first) return null;
  return first;
}

const FLOAT32_MIN_NORMAL = 2 ** -126;
const FLOAT32_MAX = 3.4028234663852886e38;

export function parseInputScale(text: string): number | 'auto' {
  if (text === 'auto') return 'auto';
  const v = parseNumber(text);
  // a scale is stored as float32: it must stay a positive normal float32 number
  if (!(v >= FLOAT32_MIN_NORMAL && v <= FLOAT32_MAX)) {
    throw new CliError(
      `--input-scale must be a positive number from 1.2e-38 to 3.4e38 (a normal float32, e.g. 1/128) or 'auto', got '${text}'`,
      { exitCode: 2 },
    );
  }
  return v;
}

/** --adaround's settings, with a progress step per layer (and every 100 steps) on stderr. */
function adaroundOptions(o: Record<string, unknown>, io: CliIo): AdaRoundOptions {
  const progress = stepProgress(io);
  return {
    ...(o['adaround-iters'] !== undefined ? { iterations: Number(o['adaround-iters']) } : {}),
    onProgress: (p) => {
      progress.step(p.index, p.layers, `adaround ${p.layer}: step ${p.iteration}/${p.iterations}`);
      if (p.index === p.layers - 1 && p.iteration === p.iterations) progress.end();
    },
  };
}
