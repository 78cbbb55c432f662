import { extname } from 'node:path';
import { modelInfoOf, setFakeQuantize } from '@qtk/core';
import type { GraphModule } from '@qtk/ir';
import { argmax, noGrad } from '@qtk/tensor';
import { parseArgs, type CommandSpec } from '../args.js';
import { batchesOf } from '../batches.js';
import { loadEvalData } from '../data/eval-data.js';
import type { Preprocess } from '../data/samples.js';
import { CliError, type CliIo } from '../io.js';
import { loadModel } from '../model-file-io.js';
import { loadOnnx, MAX_ELEMENTS_OPTION, parseShape, requireFile, sampleShapeOf } from '../model-input.js';
import { PREPROCESS_OPTIONS, preprocessFrom } from '../preprocess-options.js';
import { floatOf } from './quantize.js';

export const evalSpec: CommandSpec = {
  name: 'eval',
  summary: 'Runs a float (.onnx), QAT or fixed-point (QTK model file) model on a dataset and reports its accuracy.',
  positionals: [
    { name: 'MODEL', description: 'an .onnx file (float) or a QTK model file (float, QAT or fixed-point)' },
  ],
  options: {
    data: {
      type: 'string',
      value: 'DIR',
      description: 'the dataset: Fashion-MNIST IDX files, or .npy / PNG / JPEG files with a labels file (required)',
    },
    labels: {
      type: 'string',
      value: 'FILE',
      description: 'labels of the files in DIR: one class index per line (default DIR/labels.txt)',
    },
    split: { type: 'string', value: 'test|train', description: 'which IDX split to evaluate', default: 'test' },
    'input-shape': {
      type: 'string',
      value: 'N,C,H,W',
      description: "the model's input shape (default: declared by the ONNX file or saved by qtk quantize)",
    },
    batch: { type: 'number', value: 'N', description: 'batch size', default: 100, integer: true, min: 1 },
    limit: { type: 'number', value: 'N', description: 'evaluate only the first N samples', integer: true, min: 1 },
    ...PREPROCESS_OPTIONS,
    ...MAX_ELEMENTS_OPTION,
  },
  details: `IDX data (t10k-/train-images-idx3-ubyte and -labels-idx1-ubyte, plain or .gz) is normalised to [-1, 1]
as (pixel/255 - 0.5)/0.5. Files are read in sorted file-name order (code points), and the labels file has one
label per sample in that order (a .npy holding a batch contributes one label per row). For a model written by
'qtk quantize', the input shape and image preprocessing saved in the file are the defaults.`,
};

export function runEval(argv: readonly string[], io: CliIo): number {
  const t0 = performance.now();
  const args = parseArgs(evalSpec, argv);
  const o = args.options;
  const path = args.positionals[0]!;
  if (o.data === undefined)
    throw new CliError("missing --data DIR (the dataset)\nrun 'qtk eval --help' for the options", { exitCode: 2 });
  const split = String(o.split);
  if (split !== 'test' && split !== 'train')
    throw new CliError(`--split must be test or train, got '${split}'`, { exitCode: 2 });
  const batch = Number(o.batch);
  if (!Number.isInteger(batch) || batch < 1)
    throw new CliError(`--batch must be a positive integer, got ${o.batch}`, { exitCode: 2 });

  const { model, kind, label, meta } = load(path, args.options['max-elements']);
  const inputShape =
    o['input-shape'] !== undefined ? parseShape(String(o['input-shape']), '--input-shape') : savedShape(meta);
  const saved = (meta.preprocess ?? undefined) as Partial<Preprocess> | undefined;
  const data = loadEvalData(String(o.data), {
    split,
    ...(o.labels !== undefined ? { labels: String(o.labels) } : {}),
    sampleShape: () => sampleShapeOf(model, inputShape),
    preprocess: preprocessFrom(o, saved),
    ...(o.limit !== undefined ? { limit: Number(o.limit) } : {}),
  });
  checkShape(model, inputShape, data.inputs.shape);

  model.eval();
  if (kind === 'qat') setFakeQuantize(model, 'VALIDATION'); // evaluate with frozen scales, whatever state it was saved in
  let correct = 0;
  let k = 0;
  noGrad(() => {
    for (const x of batchesOf(data.inputs, batch)) {
      const y = floatOf(model.call(x));
      if (y.ndim !== 2 || y.shape[0] !== x.shape[0])
        throw new CliError(
          `the model's output has shape [${y.shape.join(', ')}]; eval needs class scores [N, classes]`,
        );
      const pred = argmax(y, 1).values();
      for (let i = 0; i < pred.length; i++) if (pred[i] === data.labels[k + i]) correct++;
      k += pred.length;
    }
  });
  const n = data.inputs.shape[0]!;
  io.out(`model:     ${path} (${label})\n`);
  io.out(`data:      ${data.source}\n`);
  io.out(`accuracy:  ${((100 * correct) / n).toFixed(2)}% (${correct} / ${n})\n`);
  io.out(`time:      ${((performance.now() - t0) / 1000).toFixed(2)} s\n`);
  return 0;
}

function load(
  path: string,
  maxElements?: unknown,
): { model: GraphModule; kind: string; label: string; meta: Record<string, unknown> } {
  requireFile(path, 'model');
  if (extname(path).toLowerCase() === '.onnx')
    return { model: loadOnnx(path, maxElements), kind: 'float', label: 'float, ONNX', meta: {} };
  const m = loadModel(path);
  const { kind, march } = modelInfoOf(m.model);
  const k = kind ?? m.kind;
  return { model: m.model, kind: k, label: march ? `${k}, march ${march}` : k, meta: m.meta };
}

function savedShape(meta: Record<string, unknown>): number[] | undefined {
  const s = meta.inputShape;
  if (!Array.isArray(s)) return undefined;
  return s.map((d) => (typeof d === 'number' ? d : 1));
}

const fmt = (s: readonly (number | null)[]) => `[${s.map((d) => d ?? '?').join(', ')}]`;

/** A clear error when the data's sample shape differs from the model's. */
function checkShape(model: GraphModule, inputShape: number[] | undefined, shape: readonly number[]): void {
  let want: (number | null)[];
  try {
    want = sampleShapeOf(model, inputShape);
  } catch {
    return; // the model does not say; it will check itself
  }
  const got = shape.slice(1);
  if (got.length !== want.length || want.some((d, i) => d !== null && d !== got[i])) {
    throw new CliError(
      `wrong input shape: the data has samples of shape ${fmt(got)}, but the model takes ${fmt(want)}`,
    );
  }
}
