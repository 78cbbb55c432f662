import type { Tensor } from '@qtk/tensor';
import { parseArgs, type CommandSpec } from '../args.js';
import { inputBatches } from '../batches.js';
import { SEVERAL_INPUTS_DETAILS } from '../data/input-samples.js';
import { checkLabelClasses, type EvalData, loadEvalData } from '../data/eval-data.js';
import { sampleRunOptions } from '../data/sample-options.js';
import { CliError, type CliIo, usageError } from '../io.js';
import { inputShapeOption, requireFile } from '../model-input.js';
import { type Engine, openModel, RUNNABLE_MODEL } from '../model-runner.js';
import type { SampleInput } from '../sample-inputs.js';
import { preprocessFrom } from '../preprocess-options.js';
import { runEvalReference } from './eval-reference.js';

export const evalSpec: CommandSpec = {
  name: 'eval',
  summary:
    'Runs an ONNX file (in onnxruntime) or a QTK model file (in QTK) on a dataset; reports its accuracy, or with --reference how far each output is from the float model.',
  positionals: [RUNNABLE_MODEL],
  options: {
    data: {
      type: 'string',
      value: 'DIR',
      description:
        'the dataset: Fashion-MNIST IDX files, or .npy / PNG / JPEG files with a labels file; one sub-folder DIR/<input>/ or DIR/<input>.npy per input for a model with several (required)',
      required: 'the dataset',
    },
    labels: {
      type: 'string',
      value: 'FILE',
      description: 'labels of the files in DIR: one class index per line (default DIR/labels.txt)',
    },
    reference: {
      type: 'string',
      value: 'FLOAT.onnx',
      description:
        'instead of accuracy: per output, SQNR (dB), cosine similarity, max abs error (and top-1 agreement for class scores [N, classes]) of MODEL against this float model, run in onnxruntime-node on the same samples; no labels needed',
    },
    'reference-runtime': {
      type: 'string',
      value: 'ort|qtk',
      choices: ['ort', 'qtk'],
      description:
        "with --reference: run the float model in onnxruntime-node (ort, the default) or import it into QTK (qtk: for files onnxruntime has no kernels for, such as old opsets' ops)",
    },
    json: { type: 'boolean', description: 'with --reference: print the figures as JSON instead of a table' },
    ...sampleRunOptions('evaluate', 100),
  },
  details: `IDX data (t10k-/train-images-idx3-ubyte and -labels-idx1-ubyte, plain or .gz) is normalised to [-1, 1]
as (pixel/255 - 0.5)/0.5. Files are read in sorted file-name order (code points), and the labels file has one
label per sample in that order (a .npy holding a batch contributes one label per row). For a model written by
'qtk quantize', the input shape and image preprocessing saved in the file are the defaults. An ONNX file
runs in onnxruntime-node (--engine auto, the default): float, QDQ or integer (qtk export of a fixed-point model).
A float file onnxruntime cannot load is imported into QTK instead, with a note; --engine qtk imports a float file
on purpose (QTK imports float ONNX only). QTK model files run in QTK. The time line gives the whole command and,
in parentheses, the model's forward passes alone.
${SEVERAL_INPUTS_DETAILS}

With --reference FLOAT.onnx, any model can be measured (detection, segmentation, OCR: any number of outputs of
any rank): MODEL and the reference run on the same samples, outputs paired in order, and each output gets
SQNR = 10·log10(Σ ref² / Σ (model − ref)²) in dB, the cosine similarity of the two as vectors and the largest
|model − ref|, over all its values; an output of shape [N, classes] also gets the share of samples whose
arg-max agrees (top-1 agreement). Values that are NaN or ±Infinity are left out with a warning, and the exit code
is then 1.`,
};

export async function runEval(argv: readonly string[], io: CliIo): Promise<number> {
  const t0 = performance.now();
  const args = parseArgs(evalSpec, argv);
  const o = args.options;
  const path = args.positionals[0]!;
  const split = String(o.split);
  const batch = Number(o.batch);
  if (o['reference-runtime'] !== undefined && o.reference === undefined)
    throw usageError('eval', '--reference-runtime goes with --reference FLOAT.onnx');
  const shapeOption = inputShapeOption(o);
  if (o.reference !== undefined) return runEvalReference(args, io);
  if (o.json === true) throw usageError('eval', '--json goes with --reference (the accuracy report is text)');
  const dataOptions = {
    split: split as 'test' | 'train',
    ...(o.labels !== undefined ? { labels: String(o.labels) } : {}),
    ...(o.limit !== undefined ? { limit: Number(o.limit) } : {}),
  };

  requireFile(path, 'model');
  const model = await openModel(path, {
    engine: String(o.engine) as Engine,
    ...(shapeOption ? { inputShape: shapeOption } : {}),
    maxElements: o['max-elements'],
  });
  try {
    const data = loadEvalData(String(o.data), {
      ...dataOptions,
      inputs: model.inputs,
      preprocess: preprocessFrom(o, model.savedPreprocess),
    });
    checkShapes(model.inputs, data.inputs);
    const r = await classify(data, batch, async (xs) => rowArgmax((await model.run(xs))[0]!));
    report(io, { path, label: model.label, runtime: model.runtime }, data, r, t0);
    for (const note of model.notes) io.out(`note:      ${note}\n`);
  } finally {
    await model.release();
  }
  return 0;
}

interface Classified {
  correct: number;
  /** Seconds spent in the model's forward passes. */
  seconds: number;
}

/** The predicted class of each sample of a batch, and the number of classes the model scores. */
interface Predicted {
  pred: ArrayLike<number>;
  classes: number;
}

/**
 * Runs `predict` batch by batch and counts the predictions equal to the labels; labels the model has no
 * class for are refused after the first batch (the first time the number of classes is known).
 */
async function classify(
  data: EvalData,
  batch: number,
  predict: (xs: Tensor[]) => Predicted | Promise<Predicted>,
): Promise<Classified> {
  let correct = 0;
  let k = 0;
  let seconds = 0;
  for (const xs of inputBatches(data.inputs, batch)) {
    const t = performance.now();
    const { pred, classes } = await predict(xs);
    seconds += (performance.now() - t) / 1000;
    if (k === 0) checkLabelClasses(data, classes);
    for (let i = 0; i < pred.length; i++) if (pred[i] === data.labels[k + i]) correct++;
    k += pred.length;
  }
  return { correct, seconds };
}

function checkScores(shape: readonly number[], n: number): void {
  if (shape.length !== 2 || shape[0] !== n)
    throw new CliError(`the model's output has shape [${shape.join(', ')}]; eval needs class scores [N, classes]`);
}

/**
 * The index of each row's first largest score (an integer output compares as integers: its arg-max
 * is the dequantized one's for a per-tensor scale).
 */
function rowArgmax(y: { data: ArrayLike<number>; dims: readonly number[] }): Predicted {
  checkScores(y.dims, y.dims[0]!);
  const [n, c] = y.dims as [number, number];
  const out = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    let best = 0;
    for (let j = 1; j < c; j++) {
      const v = y.data[i * c + j]!;
      const b = y.data[i * c + best]!;
      if (v > b || (Number.isNaN(b) && !Number.isNaN(v))) best = j;
    }
    out[i] = best;
  }
  return { pred: out, classes: c };
}

function report(
  io: CliIo,
  what: { path: string; label: string; runtime: string },
  data: EvalData,
  r: Classified,
  t0: number,
): void {
  const n = data.inputs[0]!.shape[0]!;
  io.out(`model:     ${what.path} (${what.label})\n`);
  io.out(`runtime:   ${what.runtime}\n`);
  io.out(`data:      ${data.source}\n`);
  io.out(`accuracy:  ${((100 * r.correct) / n).toFixed(2)}% (${r.correct} / ${n})\n`);
  io.out(`time:      ${((performance.now() - t0) / 1000).toFixed(2)} s (forward passes ${r.seconds.toFixed(2)} s)\n`);
}

const fmt = (s: readonly (number | null)[]) => `[${s.map((d) => d ?? '?').join(', ')}]`;

/** A clear error when the data's sample shape differs from the model's, naming the input of a model of several. */
function checkShapes(inputs: readonly SampleInput[], data: readonly Tensor[]): void {
  for (const [i, input] of inputs.entries()) {
    let want: (number | null)[];
    try {
      want = input.sampleShape();
    } catch {
      continue; // the model does not say; it will check itself
    }
    const got = data[i]!.shape.slice(1);
    if (got.length !== want.length || want.some((d, k) => d !== null && d !== got[k])) {
      const which = inputs.length > 1 ? ` for input '${input.name}'` : '';
      throw new CliError(
        `wrong input shape: the data has samples of shape ${fmt(got)}${which}, but the model takes ${fmt(want)}`,
      );
    }
  }
}
