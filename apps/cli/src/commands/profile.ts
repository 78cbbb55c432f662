import { existsSync, statSync } from 'node:fs';
import { convertFx, modelInfoOf, setFakeQuantize } from '@qtk/core';
import { QTensor } from '@qtk/fixed-point';
import type { GraphModule } from '@qtk/ir';
import type { ProfilerReport } from '@qtk/profiler';
import { modelProfiler, type WrittenReport } from '@qtk/profiler/node';
import { marches } from '@qtk/spec';
import { argmax, noGrad, Tensor } from '@qtk/tensor';
import { parseArgs, type CommandSpec } from '../args.js';
import { firstRows, inputBatches } from '../batches.js';
import { SEVERAL_INPUTS_DETAILS } from '../data/input-samples.js';
import { CALIBRATE_OPTIONS, calibrateOnnxModel, checkCalibrateOptions } from '../calibrated-model.js';
import { checkLabelClasses, type EvalData, hasIdx, loadEvalData, loadInputData } from '../data/eval-data.js';
import type { Preprocess } from '../data/samples.js';
import { CliError, type CliIo } from '../io.js';
import { isOnnxPath, loadModelSource } from '../model-source.js';
import { ModelNames } from '../model-names.js';
import { openInOrt, type RunnableModel } from '../model-runner.js';
import { readOnnxFile } from '../onnx-file.js';
import { inputShapeOption } from '../model-input.js';
import { modelInputs, type SampleInput, sampleShapesText } from '../sample-inputs.js';
import { shownPath } from '../display-path.js';
import { checkOutDir, checkOutPath } from '../out-path.js';
import { preprocessFrom } from '../preprocess-options.js';
import { type StepProgress, stepProgress } from '../progress.js';

export const profileSpec: CommandSpec = {
  name: 'profile',
  summary:
    'Calibrates and converts an ONNX model, compares float, calibrated and fixed point node by node, writes profiler.html.',
  positionals: [
    {
      name: 'MODEL',
      description:
        'the float ONNX model (.onnx; float32 inputs, one or several), or a QAT model file (.qtk: QAT vs its fixed-point conversion)',
    },
  ],
  options: {
    out: {
      type: 'string',
      value: 'DIR',
      description: 'the report folder: profiler.html and one JSON per tool (required)',
      required: 'the report folder',
    },
    data: {
      type: 'string',
      value: 'DIR',
      description:
        'inputs to profile on (IDX files, or .npy / images with a labels file for accuracy); default: the first calibration samples',
    },
    labels: { type: 'string', value: 'FILE', description: 'labels of the files in --data (default DIR/labels.txt)' },
    samples: {
      type: 'number',
      value: 'N',
      description: 'profile on N inputs (accuracy uses every --data sample up to --eval-limit)',
      default: 32,
      integer: true,
      min: 1,
    },
    'eval-limit': {
      type: 'number',
      value: 'N',
      description: 'with labelled --data: accuracy of each stage on at most N samples',
      default: 1000,
      integer: true,
      min: 1,
    },
    'no-runtime': { type: 'boolean', description: 'skip the onnxruntime stage of the first-divergence check' },
    ...CALIBRATE_OPTIONS,
  },
  details: `The report compares the float model with the calibrated one (similarity and statistics per node, weights,
fusion, shared modules, qconfig, devices, memory) and walks float → fake quant → fixed point → integer ONNX in
onnxruntime-node to name the first node where each pair diverges and why. With labelled --data (Fashion-MNIST IDX
files, or files with a labels file) it also prints each stage's accuracy. Open DIR/profiler.html in a browser.
A QAT model file (qtk quantize does not write one; prepareQatFx + saveModelFile, or the demo's qat-checkpoint.qtk)
is compared with its conversion for the march it records (QvsQ), on --data or --calib samples; no calibration runs.
${SEVERAL_INPUTS_DETAILS}`,
};

/** The accuracy of `model` on labelled data; labels the model has no class for are refused, not counted wrong. */
async function accuracyOn(
  model: (b: Tensor[]) => Tensor | Promise<Tensor>,
  data: EvalData,
  batch: number,
): Promise<number> {
  const pred = new Int32Array(data.inputs[0]!.shape[0]!);
  let i = 0;
  for (const b of inputBatches(data.inputs, batch)) {
    const scores = await model(b);
    if (i === 0) checkLabelClasses(data, scores.shape[1]!);
    pred.set(argmax(scores, 1).values() as ArrayLike<number>, i);
    i += b[0]!.shape[0]!;
  }
  let c = 0;
  for (let j = 0; j < pred.length; j++) if (pred[j] === data.labels[j]) c++;
  return c / pred.length;
}

/** A model of QTK's as accuracyOn runs it: its first output, dequantized when it is integer. */
const inQtk =
  (model: GraphModule) =>
  (b: Tensor[]): Tensor => {
    const y = noGrad(() => model.call(...b)) as Tensor | QTensor;
    return y instanceof QTensor ? y.dequantize() : y;
  };

/**
 * The float model's accuracy: its ONNX file in onnxruntime-node (the engine `qtk eval` runs it on), unless
 * --engine qtk, or the runtime cannot load it (then QTK's import of it, with the reason).
 */
async function floatAccuracy(
  modelPath: string,
  float: GraphModule,
  data: EvalData,
  batch: number,
  o: Record<string, unknown>,
): Promise<{ accuracy: number; engine: string }> {
  if (o.engine !== 'qtk') {
    let model: RunnableModel | null = null;
    let why = '';
    try {
      model = await openInOrt(readOnnxFile(modelPath), inputShapeOption(o));
    } catch (e) {
      if (!(e instanceof CliError) || o.engine === 'ort') throw e;
      why = e.message.split('\n')[0]!;
    }
    if (model) {
      try {
        const run = async (b: Tensor[]) => {
          const y = (await model.run(b))[0]!;
          return new Tensor({ data: y.data, shape: [...y.dims], dtype: 'float32' });
        };
        return { accuracy: await accuracyOn(run, data, batch), engine: model.runtime };
      } finally {
        await model.release();
      }
    }
    return { accuracy: await accuracyOn(inQtk(float), data, batch), engine: `qtk (${why})` };
  }
  return { accuracy: await accuracyOn(inQtk(float), data, batch), engine: 'qtk' };
}

/** The profiler's inputs: the one tensor of a one-input model, else one per input. */
function profilerInputs(inputs: Tensor[]): Tensor | Tensor[] {
  return inputs.length === 1 ? inputs[0]! : inputs;
}

function profilingLine(modelInputs: readonly SampleInput[], inputs: readonly Tensor[]): string {
  return `profiling on ${inputs[0]!.shape[0]} input(s) of ${sampleShapesText(modelInputs, inputs)}\n`;
}

export async function runProfile(argv: readonly string[], io: CliIo): Promise<number> {
  const t0 = performance.now();
  const args = parseArgs(profileSpec, argv);
  const o = args.options;
  const modelPath = args.positionals[0]!;
  if (!isOnnxPath(modelPath)) return profileQatFile(modelPath, o, io, t0);
  checkCalibrateOptions(o, 'profile');
  const outDir = String(o.out);
  checkReportDir(outDir, modelPath);
  if (o.data !== undefined && !existsSync(String(o.data)))
    throw new CliError(`--data directory ${shownPath(String(o.data))} does not exist`);
  const c = await calibrateOnnxModel(modelPath, o, io);
  io.out(`engine: calibration in ${c.calibrationEngine}\n`);
  const fixed = c.fixed;
  setFakeQuantize(c.prepared, 'VALIDATION');
  const batch = Number(o.batch);
  const samples = Number(o.samples);

  let inputs = firstRows(c.samples, samples);
  const accuracies: string[] = [];
  if (o.data !== undefined) {
    const dir = String(o.data);
    const labelled = hasIdx(dir, 'test') || o.labels !== undefined || existsSync(`${dir}/labels.txt`);
    if (labelled) {
      const data = loadEvalData(dir, {
        split: 'test',
        ...(o.labels !== undefined ? { labels: String(o.labels) } : {}),
        inputs: c.inputs,
        preprocess: c.preprocess,
        limit: Number(o['eval-limit']),
      });
      inputs = firstRows(data.inputs, samples);
      const flt = await floatAccuracy(modelPath, c.float, data, batch, o);
      accuracies.push(`float ${(100 * flt.accuracy).toFixed(2)} %`);
      for (const [name, model] of [
        ['calibrated', c.prepared],
        ['fixed point', fixed],
      ] as const) {
        const acc = await accuracyOn(inQtk(model), data, batch);
        accuracies.push(`${name} ${(100 * acc).toFixed(2)} %`);
      }
      io.out(`accuracy on ${data.labels.length} samples (${data.source}): ${accuracies.join(', ')}\n`);
      io.out(`engine: float accuracy in ${flt.engine}\n`);
    } else {
      inputs = firstRows(
        loadInputData(dir, {
          split: 'test',
          inputs: c.inputs,
          preprocess: c.preprocess,
          limit: samples,
        }).inputs,
        samples,
      );
    }
  }
  io.out(profilingLine(c.inputs, inputs));
  const progress = stepProgress(io);
  const { report, written } = await modelProfiler(c.float, c.prepared, profilerInputs(inputs), {
    mode: 'FvsQ',
    outDir,
    float: c.float,
    stages: { float: c.float, fakeQuant: c.prepared, fixed },
    runtime: o['no-runtime'] !== true,
    title: `QTK profiler: ${modelPath} on ${c.march}`,
    extra: {
      model: modelPath,
      calibration: `${c.samples[0]!.shape[0]} samples from ${o.calib} (${c.observer} observer)`,
      ...(accuracies.length ? { accuracy: accuracies.join(', ') } : {}),
    },
    onProgress: (tool, i, n) => progress.step(i, n, tool),
  });
  return finish(io, report, written!, t0, progress, new ModelNames(c.prepared));
}

function finish(
  io: CliIo,
  report: ProfilerReport,
  written: WrittenReport,
  t0: number,
  progress: StepProgress,
  names: ModelNames,
): number {
  progress.end();
  const marks = { error: '!!', warning: ' !', info: '  ' } as const;
  // node names with the ONNX file's names beside them ('conv_0 [layer1.0.conv1]')
  io.out(`${report.summary.map((n) => `${marks[n.severity]} ${names.annotate(n.text)}`).join('\n')}\n`);
  io.out(`written: ${written.html} and ${Object.keys(written.json).length} JSON files\n`);
  io.out(`time: ${((performance.now() - t0) / 1000).toFixed(2)} s\n`);
  return 0;
}

/** The report folder: an existing directory (whose profiler.html may be replaced) or a path that can be created. */
function checkReportDir(outDir: string, modelPath: string): void {
  if (existsSync(outDir) && !statSync(outDir).isDirectory())
    throw new CliError(`--out: '${outDir}' exists and is not a directory; give a folder for the report`, {
      exitCode: 2,
    });
  if (existsSync(outDir)) checkOutPath(`${outDir}/profiler.html`, [{ path: modelPath, what: 'input model' }]);
  else checkOutDir(outDir);
}

/** A QAT model file against its conversion (QvsQ) on --data or --calib samples. */
async function profileQatFile(modelPath: string, o: Record<string, unknown>, io: CliIo, t0: number): Promise<number> {
  const outDir = String(o.out);
  checkReportDir(outDir, modelPath);
  const source = loadModelSource(modelPath, o['max-elements']);
  if (source.kind !== 'qat')
    throw new CliError(
      `qtk profile takes a float ONNX model or a QAT model file; ${modelPath} is ${source.label}` +
        (source.kind === 'fixed-point' ? ' (compare it with its integer ONNX export: qtk compare)' : ''),
      { exitCode: 2 },
    );
  const march = modelInfoOf(source.model).march;
  if (!march || !marches.has(march))
    throw new CliError(`${modelPath} records no registered march (${march ?? 'none'}); it cannot be converted`);
  const dir = o.data ?? o.calib;
  if (dir === undefined)
    throw new CliError('a QAT model file is profiled on --data DIR (or --calib DIR) samples; give one', {
      exitCode: 2,
    });
  const modelIns = modelInputs(source.model, inputShapeOption(o), source.meta);
  const qat = source.model;
  setFakeQuantize(qat, 'VALIDATION');
  const fixed = convertFx(qat, { march, onWarning: () => {} });
  const samples = Number(o.samples);
  const pre = preprocessFrom(o, (source.meta.preprocess ?? undefined) as Partial<Preprocess> | undefined);
  // IDX data has its own shape; .npy and image files need the model's (saved by the file, or --input-shape)
  let inputs: Tensor[];
  const accuracies: string[] = [];
  const labelled = hasIdx(String(dir), 'test') || o.labels !== undefined || existsSync(`${dir}/labels.txt`);
  if (o.data !== undefined && labelled) {
    const data = loadEvalData(String(dir), {
      split: 'test',
      ...(o.labels !== undefined ? { labels: String(o.labels) } : {}),
      inputs: modelIns,
      preprocess: pre,
      limit: Number(o['eval-limit']),
    });
    inputs = firstRows(data.inputs, samples);
    for (const [name, model] of [
      ['QAT', qat],
      ['fixed point', fixed],
    ] as const)
      accuracies.push(`${name} ${(100 * (await accuracyOn(inQtk(model), data, Number(o.batch)))).toFixed(2)} %`);
    io.out(`accuracy on ${data.labels.length} samples (${data.source}): ${accuracies.join(', ')}\n`);
  } else {
    inputs = firstRows(
      loadInputData(String(dir), { split: 'test', inputs: modelIns, preprocess: pre, limit: samples }).inputs,
      samples,
    );
  }
  io.out(profilingLine(modelIns, inputs));
  const progress = stepProgress(io);
  const { report, written } = await modelProfiler(qat, fixed, profilerInputs(inputs), {
    mode: 'QvsQ',
    outDir,
    stages: { fakeQuant: qat, fixed },
    runtime: o['no-runtime'] !== true,
    title: `QTK profiler: ${modelPath} (QAT) vs fixed point on ${march}`,
    extra: { model: modelPath, ...(accuracies.length ? { accuracy: accuracies.join(', ') } : {}) },
    onProgress: (tool, i, n) => progress.step(i, n, tool),
  });
  return finish(io, report, written!, t0, progress, new ModelNames(qat));
}
