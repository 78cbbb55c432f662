// Any model the CLI can run, behind one interface: a float ONNX file imported into QTK or run in onnxruntime-node,
// a quantized (QDQ / integer) ONNX file in onnxruntime-node, a float QTK model file exported to onnxruntime-node
// (or in QTK), a QAT or fixed-point model file in QTK.
// qtk run and qtk eval --reference use it; every output comes back as float32 values with its name and shape.
import { setFakeQuantize } from '@qtk/core';
import { QTensor } from '@qtk/fixed-point';
import { noGrad, Tensor } from '@qtk/tensor';
import type { OptionSpec } from './args.js';
import type { Preprocess } from './data/samples.js';
import { ioNamesOf, savedIoNames } from './io-names.js';
import { CliError } from './io.js';
import type { InputShapeOption } from './input-shape-option.js';
import { isOnnxPath, loadModelSource } from './model-source.js';
import { FORM_LABEL, type OnnxFile, readOnnxFile } from './onnx-file.js';
import { fileInputs, modelInputs, type SampleInput } from './sample-inputs.js';
import { type OutputInfo, savedOutputs, savedPreprocess } from './onnx-metadata.js';
import { OrtModel, type RuntimeOutput } from './ort-session.js';
import { FloatModelOnRuntime } from './model-file-on-ort.js';
import { FixedModelEngines } from './fixed-model-engines.js';

/** One output of one batch: float32 values (an exported integer output dequantized with its recorded scale). */
export interface NamedOutput {
  readonly name: string;
  readonly dims: readonly number[];
  readonly data: Float32Array;
}

export interface RunnableModel {
  readonly path: string;
  /** 'float, ONNX', 'fixed-point, march bayes', 'integer ONNX', ... */
  readonly label: string;
  /** 'qtk' or 'onnxruntime-node <version>'. */
  readonly runtime: string;
  /** The model's inputs, each with the shape of one sample (sampleShape throws when the model does not say). */
  readonly inputs: readonly SampleInput[];
  /** The preprocessing the file records (qtk quantize saves it; qtk export copies it), if any. */
  readonly savedPreprocess: Partial<Preprocess> | undefined;
  /** Notes for the user (an integer output written as integers, ...), gathered while running. */
  readonly notes: string[];
  /** Runs one batch: one [k, ...] tensor per input, in `inputs`' order. */
  run(xs: readonly Tensor[]): Promise<NamedOutput[]>;
  release(): Promise<void>;
}

/** The MODEL positional of the commands that run any model (run, eval). */
export const RUNNABLE_MODEL = {
  name: 'MODEL',
  description: 'an .onnx file (float, QDQ or integer) or a QTK model file (float, QAT or fixed-point)',
};

/** Where a command's forward passes run: onnxruntime-node, QTK's own kernels, or the fastest that can (auto). */
export type Engine = 'auto' | 'ort' | 'qtk';

/** An --engine option (default auto) whose help says what the command runs where. */
export function engineOption(description: string): Readonly<Record<string, OptionSpec>> {
  return {
    engine: { type: 'string', value: 'auto|ort|qtk', choices: ['auto', 'ort', 'qtk'], default: 'auto', description },
  };
}

/** --engine of the commands that run a model (run, eval). */
export const ENGINE_OPTION = engineOption(
  'where an .onnx file runs: onnxruntime-node (ort) or imported into QTK (qtk, float files only); auto runs every .onnx file in onnxruntime-node and imports a float file it cannot load, saying so. A float QTK model file is exported and run in onnxruntime-node the same way; QAT and fixed-point model files run in QTK',
);

export interface OpenModelOptions {
  /** Where an .onnx file runs (default auto: onnxruntime-node, a float file it cannot load imported into QTK). */
  readonly engine?: Engine;
  readonly inputShape?: InputShapeOption;
  readonly maxElements?: unknown;
}

/** Opens MODEL for running; the errors name the file and what to do. */
export async function openModel(path: string, o: OpenModelOptions = {}): Promise<RunnableModel> {
  const engine = o.engine ?? 'auto';
  if (isOnnxPath(path)) {
    const file = readOnnxFile(path);
    if (engine === 'qtk') {
      if (file.form.kind !== 'float') throw notImportable(file);
      return openInQtk(path, o);
    }
    if (engine === 'ort' || file.form.kind !== 'float') return openInOrt(file, o.inputShape);
    try {
      return await openInOrt(file, o.inputShape);
    } catch (e) {
      if (!(e instanceof CliError)) throw e;
      const model = openInQtk(path, o);
      model.notes.push(`${e.message.split('\n')[0]}: imported into QTK instead`);
      return model;
    }
  }
  return openInQtk(path, o, engine);
}

/** Why QTK cannot run a quantized ONNX file, and what to do instead. */
export function notImportable(file: OnnxFile): CliError {
  return new CliError(
    `--engine qtk cannot run ${file.path}: it is ${FORM_LABEL[file.form.kind]} (${file.form.evidence}), and QTK imports float ONNX only. ` +
      'Run it with --engine ort (or auto, the default), or use the QTK model file it was exported from',
  );
}

/** An .onnx file in onnxruntime-node. */
export async function openInOrt(file: OnnxFile, inputShape?: InputShapeOption): Promise<RunnableModel> {
  const inputs = fileInputs(file, inputShape);
  const ort = await OrtModel.create(file);
  const infos = new Map((savedOutputs(file.model) ?? []).map((i) => [i.name, i]));
  const notes: string[] = [];
  return {
    path: file.path,
    label: FORM_LABEL[file.form.kind],
    runtime: `onnxruntime-node ${ort.version}`,
    inputs,
    savedPreprocess: savedPreprocess(file.model),
    notes,
    async run(xs) {
      const outputs = await ort.run(xs);
      return outputs.map((y, i) => {
        const name = ort.outputNames[i] ?? `output_${i}`;
        return { name, dims: [...y.dims], data: floatValues(y, infos.get(name), name, notes) };
      });
    },
    release: () => ort.release(),
  };
}

const FLOAT_TYPES = new Set(['float32', 'float64', 'float16']);

/**
 * A runtime output as float32: float outputs as they are; an integer output of qtk export (recorded in the file's
 * metadata with its scale) as integer × scale; any other integer output (an arg-max, a count) as its numbers.
 */
function floatValues(y: RuntimeOutput, info: OutputInfo | undefined, name: string, notes: string[]): Float32Array {
  const out = Float32Array.from(y.data);
  if (FLOAT_TYPES.has(y.type)) return out;
  const scale = info?.scale;
  if (!scale || scale.length === 0) {
    const note = `output '${name}' holds ${y.type} values and the file records no scale for it: written as the integers`;
    if (!notes.includes(note)) notes.push(note);
    return out;
  }
  if (info.axis === null || info.axis === undefined || scale.length === 1) {
    for (let i = 0; i < out.length; i++) out[i] = out[i]! * scale[0]!;
    return out;
  }
  const axis = info.axis;
  const inner = y.dims.slice(axis + 1).reduce((p, d) => p * d, 1);
  const channels = y.dims[axis]!;
  if (channels !== scale.length)
    throw new CliError(
      `output '${name}' has ${channels} channels along axis ${axis}, but the file's metadata records ${scale.length} scales; re-export the model`,
    );
  for (let i = 0; i < out.length; i++) out[i] = out[i]! * scale[Math.floor(i / inner) % channels]!;
  return out;
}

/**
 * A float ONNX file imported into QTK, or a QTK model file. A float model file runs in onnxruntime-node unless
 * `engine` is qtk (FloatModelOnRuntime: exported on the first batch and checked; QTK with a note when that fails);
 * any other kind runs in QTK, and --engine ort on it is a usage error.
 */
function openInQtk(path: string, o: OpenModelOptions, engine: Engine = 'qtk'): RunnableModel {
  const { model, kind, label, meta } = loadModelSource(path, o.maxElements, o.inputShape);
  if (engine === 'ort' && kind !== 'float' && kind !== 'fixed-point')
    throw new CliError(
      `--engine ort runs ONNX files and float or fixed-point model files, and ${path} is a ${kind} model file: export it first (qtk export ${path} --out FILE.onnx), then run FILE.onnx`,
      { exitCode: 2 },
    );
  const inputs = modelInputs(model, o.inputShape, meta);
  const names = (ioNamesOf(model) ?? savedIoNames(meta))?.outputs;
  model.eval();
  if (kind === 'qat') setFakeQuantize(model, 'VALIDATION'); // frozen scales, whatever state it was saved in
  const elsewhere = engine !== 'qtk' && !isOnnxPath(path);
  const onRuntime = elsewhere && kind === 'float' ? new FloatModelOnRuntime(model) : null;
  const fixedEngines = elsewhere && kind === 'fixed-point' ? new FixedModelEngines(model, engine === 'ort') : null;
  const notes: string[] = [];
  const fellBack = (why: string | null | undefined) => {
    if (!why) return;
    if (engine === 'ort') throw new CliError(`--engine ort: ${path} cannot run in onnxruntime-node: ${why}`);
    const note = `${why}: run in QTK instead`;
    if (!notes.includes(note)) notes.push(note);
  };
  return {
    path,
    label,
    get runtime() {
      return onRuntime?.engine ?? fixedEngines?.engine ?? 'qtk';
    },
    inputs,
    savedPreprocess: (meta.preprocess ?? undefined) as Partial<Preprocess> | undefined,
    notes,
    async run(xs) {
      const fromRuntime = (await onRuntime?.run(xs)) ?? (await fixedEngines?.run(xs));
      fellBack(onRuntime?.why ?? fixedEngines?.why);
      const y = fromRuntime ?? noGrad(() => model.call(...xs));
      const values: unknown[] = Array.isArray(y) ? y : [y];
      return values.map((v, i) => {
        const name = names?.length === values.length ? names[i]! : values.length === 1 ? 'output' : `output_${i}`;
        const t = v instanceof QTensor ? v.dequantize() : v;
        if (!(t instanceof Tensor))
          throw new CliError(
            `${path}: output ${i} ('${name}') is a ${typeof v}, not a tensor; qtk writes tensor outputs`,
          );
        return { name, dims: [...t.shape], data: Float32Array.from(t.values() as ArrayLike<number>) };
      });
    },
    release: async () => {
      await onRuntime?.release();
      await fixedEngines?.release();
    },
  };
}
