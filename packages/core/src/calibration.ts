import { FakeQuantize, setFakeQuantize } from '@qtk/fake-quant';
import { findSubmodule, GraphModule } from '@qtk/ir';
import type { Module, StateDict } from '@qtk/nn';
import { noGrad, type Tensor } from '@qtk/tensor';

export interface CalibrateOptions {
  /** Stop after this many batches. */
  numBatches?: number;
  /** Called after each batch (progress). */
  onBatch?: (index: number) => void;
  /** Receives one message per fake-quant whose scale does not describe the data (default: console.warn). */
  onWarning?: (message: string) => void;
}

/**
 * How one calibration batch reaches the fake-quants' observers. The default runs the model's forward in QTK;
 * another engine (onnxruntime, `runtimeCalibration` of @qtk/onnx-deploy) computes the observed values itself
 * and hands each fake-quant its value, in the CALIBRATION state calibrateAsync has set.
 */
export type CalibrationBatchRunner = ((batch: CalibrationBatch) => void | Promise<void>) & {
  /** Called once when calibration ends (after the last batch, or on an error): frees what the engine holds. */
  release?: () => void | Promise<void>;
};

export interface CalibrateAsyncOptions extends CalibrateOptions {
  /** Runs each batch (default: the model's forward in QTK). */
  runBatch?: CalibrationBatchRunner;
}

/** A fake-quant whose calibrated scale does not describe the data (FakeQuantize.calibrationIssue). */
export interface CalibrationIssue {
  /** The fake-quant's module name in the model. */
  readonly module: string;
  readonly issue: string;
}

/** Every fake-quant of `model` whose scale does not describe the data it saw, in module order. */
export function calibrationIssues(model: Module): CalibrationIssue[] {
  const out: CalibrationIssue[] = [];
  for (const [name, m] of model.namedModules()) {
    if (!(m instanceof FakeQuantize)) continue;
    const issue = m.calibrationIssue();
    if (issue) out.push({ module: name, issue });
  }
  return out;
}

/**
 * Module paths of the fake-quants of `model` whose observers never saw data (their scale is still the
 * placeholder): not calibrated, not trained, not loaded from a calibrated state dict. Fixed-scale ones
 * hold their scale from the start. With `under`, only fake-quants at or inside these module paths
 * count (a graph's called modules; a module the forward never calls sees no data and needs none).
 */
export function uncalibratedFakeQuants(model: Module, under?: readonly string[]): string[] {
  const inside = (path: string) => under === undefined || under.some((u) => path === u || path.startsWith(`${u}.`));
  return model
    .namedModules()
    .filter(([path, m]) => m instanceof FakeQuantize && !m.isInitialized && inside(path))
    .map(([path]) => path);
}

/** One calibration batch: the model's input, or one tensor per input. */
export type CalibrationBatch = Tensor | Tensor[];

/**
 * The calibration flow: CALIBRATION state, eval mode, forward every batch without gradients
 * (observers collect statistics, values pass unquantized), then VALIDATION. Returns the batch count.
 * A fake-quant left without a usable scale (no finite value seen, or only zeros) is reported
 * through `onWarning`, naming the module.
 */
export function calibrate(model: Module, batches: Iterable<CalibrationBatch>, options: CalibrateOptions = {}): number {
  const run = startCalibration(model, options);
  try {
    noGrad(() => {
      for (const b of batches) {
        if (!run.wantsMore()) break;
        run.forward(b);
        run.batchDone();
      }
    });
  } finally {
    run.stopRecording();
  }
  return run.finish();
}

/**
 * calibrate for batches that arrive asynchronously (read from files or a stream as calibration goes):
 * the same states, statistics and warnings, one batch in memory at a time.
 */
export async function calibrateAsync(
  model: Module,
  batches: AsyncIterable<CalibrationBatch> | Iterable<CalibrationBatch>,
  options: CalibrateAsyncOptions = {},
): Promise<number> {
  const run = startCalibration(model, options);
  const runBatch = options.runBatch;
  try {
    for await (const b of batches) {
      if (!run.wantsMore()) break;
      if (runBatch) await runBatch(b);
      else noGrad(() => run.forward(b));
      run.batchDone();
    }
  } finally {
    run.stopRecording();
    await runBatch?.release?.();
  }
  return run.finish();
}

/** calibrate's steps, shared by its synchronous and asynchronous forms. */
function startCalibration(model: Module, options: CalibrateOptions) {
  model.eval();
  setFakeQuantize(model, 'CALIBRATION');
  let n = 0;
  const recording = recordInputShapes(model);
  return {
    /** False once numBatches batches ran. */
    wantsMore: () => options.numBatches === undefined || n < options.numBatches,
    /** The model's forward on one batch, in QTK. */
    forward(b: CalibrationBatch): void {
      (model as unknown as { call(...a: Tensor[]): unknown }).call(...(Array.isArray(b) ? b : [b]));
    },
    batchDone(): void {
      options.onBatch?.(n);
      n++;
    },
    stopRecording: () => recording.stop(),
    /** VALIDATION state, the warnings; returns the batch count. */
    finish(): number {
      setFakeQuantize(model, 'VALIDATION');
      const warn = options.onWarning ?? ((m: string) => console.warn(`[qtk] ${m}`));
      for (const { module, issue } of calibrationIssues(model)) warn(`calibration: fake-quant '${module}' ${issue}`);
      return n;
    },
  };
}

/** A QatModule's fake-quant slots: a QAT qconfig without an activation (an "out" qconfig) leaves the first null. */
const FAKE_QUANT_SLOTS = ['activationPostProcess', 'weightFakeQuant'];

/**
 * `state` without the fake-quants whose slot is empty in `model`: the calibration observed an output the QAT
 * qconfigs leave unquantized (horizon_plugin_pytorch's guides calibrate every layer, then give the output layer an
 * "out" qconfig for QAT). Anything else that differs still fails the strict load.
 */
function withoutDroppedFakeQuants(model: Module, state: StateDict): StateDict {
  const dropped = (modulePath: string): boolean => {
    const cut = modulePath.lastIndexOf('.');
    const slot = modulePath.slice(cut + 1);
    if (!FAKE_QUANT_SLOTS.includes(slot)) return false;
    const owner = findSubmodule(model, cut < 0 ? '' : modulePath.slice(0, cut));
    return owner !== null && (owner as unknown as Record<string, unknown>)[slot] === null;
  };
  const ownerOf = (key: string) => key.slice(0, Math.max(0, key.lastIndexOf('.')));
  const tensors = Object.fromEntries(Object.entries(state.tensors).filter(([k]) => !dropped(ownerOf(k))));
  const extra = state.extra && Object.fromEntries(Object.entries(state.extra).filter(([path]) => !dropped(path)));
  return { ...state, tensors, ...(extra ? { extra } : {}) };
}

/**
 * The QAT flow's start: load a calibrated model's state dict into a model prepared with a QAT
 * qconfig, switch its fake-quants to QAT and the model to training mode. The state dict carries
 * weights, scales and observer statistics, so QAT observers resume from the calibration: with
 * `averagingConstant: 0` the calibrated scales stay fixed, with a positive one they move from the
 * calibrated statistics instead of restarting on the first batch. When the calibration used another
 * observer kind (kl, mse, percentile) or the dict has no statistics (a file written before they were
 * saved), min/max observers start from the calibrated scale. Loading is strict (the two models must
 * be prepared alike; a `StateDictError` lists what does not match), except for the calibration's fake-quants of
 * outputs the QAT qconfigs leave unquantized (an "out" qconfig on the output layer), which are left out.
 */
export function startQat(model: Module, calibrationState?: StateDict): void {
  if (calibrationState) model.loadStateDict(withoutDroppedFakeQuants(model, calibrationState));
  setFakeQuantize(model, 'QAT');
  model.train();
}

/** `node.meta` key: the shape of a module node's first input in the last calibration batch (conversion reads it). */
export const CALIBRATED_INPUT_SHAPE = 'calibratedInputShape';

/** While calibrating a GraphModule, records each module node's first input shape in its meta. */
function recordInputShapes(model: Module): { stop(): void } {
  if (!(model instanceof GraphModule)) return { stop: () => {} };
  const handles: { remove(): void }[] = [];
  for (const node of model.graph.nodes) {
    if (node.op !== 'call_module' || node.method !== undefined) continue;
    const m = findSubmodule(model, node.target);
    if (!m) continue;
    handles.push(
      m.registerForwardPreHook((_m, args) => {
        const x = args[0] as { shape?: unknown } | undefined;
        if (x && Array.isArray(x.shape)) node.meta[CALIBRATED_INPUT_SHAPE] = [...(x.shape as number[])];
      }),
    );
  }
  return {
    stop: () => {
      for (const h of handles) h.remove();
    },
  };
}
