import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { modelInfoOf, setFakeQuantize } from '@qtk/core';
import { QTensor } from '@qtk/fixed-point';
import type { GraphModule, Node } from '@qtk/ir';
import { NODE_VALUES_KEY } from '@qtk/onnx';
import { type FloatTolerance, formatRuntimeComparison, type RuntimeComparison } from '@qtk/onnx-deploy';
import { compareWithRuntime } from '@qtk/onnx-deploy/node';
import { QtkError } from '@qtk/spec';
import { noGrad, Tensor } from '@qtk/tensor';
import { parseArgs, parseNumber, type CommandSpec } from '../args.js';
import { inputBatches } from '../batches.js';
import { SEVERAL_INPUTS_DETAILS } from '../data/input-samples.js';
import { loadInputData } from '../data/eval-data.js';
import { INPUT_DATA_OPTION } from '../data/sample-options.js';
import type { Preprocess } from '../data/samples.js';
import { CliError, type CliIo } from '../io.js';
import type { InputShapeOption } from '../input-shape-option.js';
import { inputShapeFor, inputShapeOption, sampleShapeFrom } from '../model-input.js';
import { isOnnxPath, loadModelSource, savedShape } from '../model-source.js';
import { FORM_LABEL, type OnnxFile, type OnnxForm, readOnnxFile } from '../onnx-file.js';
import { fileInputs, floatInputs, modelInputs, type SampleInput, sampleShapesText } from '../sample-inputs.js';
import { MARCH_KEY, MODEL_SHA256_KEY, metadataOf } from '../onnx-metadata.js';
import { OrtModel, type RuntimeOutput } from '../ort-session.js';
import { PREPROCESS_OPTIONS, preprocessFrom } from '../preprocess-options.js';

export const compareSpec: CommandSpec = {
  name: 'compare',
  summary: 'Runs a QTK model file and its exported ONNX file (in onnxruntime-node) on data; compares every value.',
  positionals: [
    { name: 'MODEL', description: 'the QTK model file (fixed-point, or float / QAT)' },
    { name: 'ONNX', description: "the ONNX file 'qtk export MODEL' wrote" },
  ],
  options: {
    ...INPUT_DATA_OPTION,
    split: {
      type: 'string',
      value: 'test|train',
      description: 'which IDX split to use',
      default: 'test',
      choices: ['test', 'train'],
    },
    'input-shape': {
      type: 'string',
      value: 'N,C,H,W',
      description:
        "the model's input shape (default: saved by qtk quantize, or declared by the ONNX file); NAME=SHAPE;... for several inputs",
    },
    batch: { type: 'number', value: 'N', description: 'batch size', default: 100, integer: true, min: 1 },
    limit: { type: 'number', value: 'N', description: 'compare on the first N samples only', integer: true, min: 1 },
    rtol: {
      type: 'string',
      value: 'R',
      description:
        'float values (CPU ops, dequantized outputs) within atol + rtol·|QTK value| count as equal (a number >= 0)',
      default: '1e-5',
    },
    atol: {
      type: 'string',
      value: 'A',
      description: 'the absolute part of the float tolerance (a number >= 0; 0 with --rtol 0: floats bit for bit too)',
      default: '1e-6',
    },
    ...PREPROCESS_OPTIONS,
  },
  details: `Each batch runs in QTK and in onnxruntime-node with every intermediate value of the export added to the
runtime's outputs (compareWithRuntime of @qtk/onnx), and every node's value is compared: integers (the BPU's
quantized values) bit for bit, float values (the CPU ops of a hybrid model, dequantized outputs) within
atol + rtol·|QTK value|, since onnxruntime's float kernels may round in another order. Nodes that read a float value
within the tolerance are fed the runtime's value, so each node is compared on the inputs the runtime gave it (a
quantize of a CPU op's output for the BPU agrees bit for bit, not one step off). The outputs line compares the
outputs end to end, and a 'rounding:' line says when they differ only because tolerated floats were quantized to
other steps (exit code 1: the deployed file gives other outputs). --rtol 0 --atol 0 compares every value bit for
bit. Prints the share of samples
whose outputs are identical (all output elements of the sample) and the first differing node in execution order over
all batches, with how it differs. A file whose metadata records another march (qtk.march) or another model file
(qtk.model_sha256) than MODEL is refused. Exit code 0 when every value is identical, 1 when something differs, 2 for
a usage error. Both sides are fed every input of the model.
${SEVERAL_INPUTS_DETAILS}`,
};

/** The earliest difference seen: the comparison of its batch, the node's position, the batch's first sample. */
interface FirstDifference {
  comparison: RuntimeComparison;
  position: number;
  from: number;
  to: number;
}

export async function runCompare(argv: readonly string[], io: CliIo): Promise<number> {
  const t0 = performance.now();
  const args = parseArgs(compareSpec, argv);
  const o = args.options;
  const [modelPath, onnxPath] = args.positionals as [string, string];
  if (isOnnxPath(modelPath))
    throw new CliError(
      `MODEL must be a QTK model file (the model QTK runs), got the ONNX file ${modelPath}\nrun 'qtk compare --help' for the options`,
      { exitCode: 2 },
    );
  const split = String(o.split);
  const batch = Number(o.batch);
  const tolerance: FloatTolerance = { rtol: parseTolerance(o.rtol, 'rtol'), atol: parseTolerance(o.atol, 'atol') };

  const file = readOnnxFile(onnxPath);
  if (!file.hasNodeValues)
    throw new CliError(
      `${onnxPath} has no '${NODE_VALUES_KEY}' metadata (the map from QTK nodes to ONNX values), so its values cannot be matched to QTK's; compare a file written by 'qtk export ${modelPath}'`,
    );
  floatInputs(file);
  const shapeOption = inputShapeOption(o);
  const { model, kind, label, meta } = loadModelSource(modelPath, undefined, shapeOption);
  checkSameMarchAndModel(file, modelPath, model);
  checkExportedFrom(file, modelPath, model, kind);
  const inputs = comparedInputs(file, model, shapeOption, meta);
  const data = loadInputData(String(o.data), {
    split: split as 'test' | 'train',
    inputs,
    preprocess: preprocessFrom(o, (meta.preprocess ?? undefined) as Partial<Preprocess> | undefined),
    ...(o.limit !== undefined ? { limit: Number(o.limit) } : {}),
  });

  model.eval();
  if (kind === 'qat') setFakeQuantize(model, 'VALIDATION');
  const outputs = outputNodeNames(model);
  let identicalSamples = 0;
  let first: FirstDifference | null = null;
  let compared = 0;
  const tolerated = { elements: 0, maxAbsDiff: 0, node: '', inOutputs: false };
  // whether some node was fed the runtime's value of a float that differed within the tolerance (replacedFloats)
  let replacedFloats = false;
  // CPU nodes whose own output fake-quant put a float sum of the runtime's one step away (roundedFromFloat)
  const rounded = { elements: 0, nodes: new Set<string>() };
  const seconds = { qtk: 0, runtime: 0 };
  let ort: OrtModel | null = null;
  let at = 0;
  try {
    for (const xs of inputBatches(data.inputs, batch)) {
      const k = xs[0]!.shape[0]!;
      const c = await compareInRuntime(model, file, xs, tolerance);
      seconds.qtk += c.seconds.qtk;
      seconds.runtime += c.seconds.runtime;
      compared = c.nodes.length;
      for (const n of c.nodes) {
        if (n.roundedFromFloat > 0) {
          rounded.elements += n.roundedFromFloat;
          rounded.nodes.add(n.node);
        }
        if (n.withinTolerance === 0) continue;
        tolerated.elements += n.withinTolerance;
        if (n.mismatches === 0 && n.maxAbsDiff > tolerated.maxAbsDiff) {
          tolerated.maxAbsDiff = n.maxAbsDiff;
          tolerated.node = n.node;
        }
      }
      const outputComparisons = c.nodes.filter((n) => outputs.includes(n.node));
      if (outputComparisons.some((n) => n.withinTolerance > 0)) tolerated.inOutputs = true;
      // node by node, the readers of a tolerated float ran on the runtime's value: outputs are judged end to end
      if (c.replacedFloats > 0) replacedFloats = true;
      if (
        c.replacedFloats === 0 &&
        outputComparisons.length === outputs.length &&
        outputComparisons.every((n) => n.mismatches === 0)
      )
        identicalSamples += k;
      else {
        ort ??= await OrtModel.create(file);
        identicalSamples += await identicalRows(model, ort, xs, tolerance);
      }
      if (c.firstDifference) {
        const position = c.nodes.indexOf(c.firstDifference);
        if (!first || position < first.position) first = { comparison: c, position, from: at, to: at + k - 1 };
      }
      at += k;
    }
  } finally {
    await ort?.release();
  }

  const n = data.inputs[0]!.shape[0]!;
  const identical = first === null && identicalSamples === n;
  const lines = [
    `model:     ${modelPath} (${label})`,
    `onnx:      ${onnxPath} (${FORM_LABEL[file.form.kind]}, opset ${file.opset ?? '?'})`,
    `data:      ${n} samples of ${sampleShapesText(inputs, data.inputs)} from ${data.source}`,
    `outputs:   ${((100 * identicalSamples) / n).toFixed(2)}% ${tolerated.inOutputs ? 'identical' : 'bit-identical'} (${identicalSamples} / ${n} samples)`,
    first
      ? `values:    ${formatRuntimeComparison(first.comparison)} (in the batch of samples ${first.from}..${first.to})`
      : `values:    all ${compared} compared values identical in every batch`,
    ...(tolerated.elements
      ? [
          `floats:    ${tolerated.elements} float element(s) differ within the tolerance (atol ${tolerance.atol} + rtol ${tolerance.rtol}·|value|)` +
            (tolerated.node ? `, at most ${tolerated.maxAbsDiff} (node '${tolerated.node}')` : '') +
            '; integers are compared bit for bit',
        ]
      : []),
    ...(rounded.elements
      ? [
          `steps:     ${rounded.elements} float value(s) at ${rounded.nodes.size} CPU node(s) (first '${[...rounded.nodes][0]}') one step of the node's own output fake-quant apart: ` +
            "the runtime's float kernel summed in another order; the nodes after them ran on the runtime's values",
        ]
      : []),
    ...(replacedFloats && identicalSamples < n
      ? [
          `rounding:  ${n - identicalSamples} sample(s) differ end to end although every node agrees on the inputs the runtime gave it: ` +
            'float values within the tolerance (CPU ops) fell on different integer steps where they were quantized for the BPU',
        ]
      : []),
    `time:      ${((performance.now() - t0) / 1000).toFixed(2)} s (forward passes: QTK ${seconds.qtk.toFixed(2)} s, onnxruntime ${seconds.runtime.toFixed(2)} s)`,
  ];
  io.out(`${lines.join('\n')}\n`);
  return identical ? 0 : 1;
}

/**
 * The inputs both sides are fed: a one-input model's shape from --input-shape, the model file or the ONNX input (as
 * qtk always read it); a model of several inputs as its model file records them, the ONNX file's where it does not.
 */
function comparedInputs(
  file: OnnxFile,
  model: GraphModule,
  option: InputShapeOption | undefined,
  meta: Record<string, unknown>,
): SampleInput[] {
  if (file.inputs.length === 1) {
    const input = file.inputs[0]!;
    const shape = inputShapeFor(model, option) ?? savedShape(meta);
    return [{ name: input.name, sampleShape: () => sampleShapeFrom(input.shape, shape) }];
  }
  const own = modelInputs(model, option, meta);
  if (own.length !== file.inputs.length)
    throw new CliError(
      `${file.path} takes ${file.inputs.length} inputs, but the model takes ${own.length}: compare the file 'qtk export' wrote from it`,
    );
  const declared = fileInputs(file, option);
  return own.map((input, i) => ({
    name: input.name,
    sampleShape: () => {
      try {
        return input.sampleShape();
      } catch {
        return declared[i]!.sampleShape();
      }
    },
  }));
}

/** A tolerance option's value: a finite number >= 0 (a fraction such as 1/1e5 too), else a usage error. */
function parseTolerance(value: unknown, option: string): number {
  const v = parseNumber(String(value));
  if (!(Number.isFinite(v) && v >= 0))
    throw new CliError(`option '--${option}' must be a number >= 0, got '${value}'`, { exitCode: 2 });
  return v;
}

/** compareWithRuntime, with the runtime's own failures (a file it cannot load or run) as clear errors. */
async function compareInRuntime(
  model: GraphModule,
  file: OnnxFile,
  xs: readonly Tensor[],
  floatTolerance: FloatTolerance,
): Promise<RuntimeComparison> {
  try {
    return await compareWithRuntime(model, file.bytes, xs, { floatTolerance });
  } catch (e) {
    if (QtkError.isInstance(e)) throw e;
    throw new CliError(`onnxruntime-node cannot run ${file.path}: ${(e as Error).message}`, { cause: e });
  }
}

/** The form QTK's export gives a model of each kind. */
const EXPORTED_FORM: Readonly<Record<string, OnnxForm['kind']>> = {
  float: 'float',
  qat: 'qdq',
  'fixed-point': 'integer',
};

/**
 * Refuses an ONNX file that cannot have been exported from the model: a float file for a quantized
 * model or a quantized file for a float one (QDQ and integer are not told apart here: a heterogeneous
 * model's integer export has QDQ boundaries), or values mapped to nodes the model does not have.
 */
function checkExportedFrom(file: OnnxFile, modelPath: string, model: GraphModule, kind: string): void {
  const hint = `compare ${modelPath} with the file 'qtk export ${modelPath}' writes`;
  const expected = EXPORTED_FORM[kind];
  if (expected && (expected === 'float') !== (file.form.kind === 'float'))
    throw new CliError(
      `${file.path} is ${FORM_LABEL[file.form.kind]}, but ${modelPath} is a ${kind} model, which exports as ${FORM_LABEL[expected]}: ${hint}`,
    );
  const entry = file.model.metadata_props?.find((p) => p.key === NODE_VALUES_KEY)?.value ?? '[]';
  let pairs: unknown;
  try {
    pairs = JSON.parse(entry);
  } catch {
    pairs = null;
  }
  if (!Array.isArray(pairs))
    throw new CliError(`${file.path}: its '${NODE_VALUES_KEY}' metadata is not a JSON list of [node, value] pairs`);
  const known = new Set(model.graph.nodes.map((n) => n.name));
  const foreign = pairs.map((p) => String((p as unknown[])[0])).filter((n) => !known.has(n));
  if (foreign.length > 0)
    throw new CliError(
      `${file.path} maps values of ${foreign.length} node(s) ${modelPath} does not have (${foreign
        .slice(0, 5)
        .map((n) => `'${n}'`)
        .join(', ')}${foreign.length > 5 ? ', ...' : ''}): it was exported from another model; ${hint}`,
    );
}

/** The names of the nodes whose values the model returns. */
function outputNodeNames(model: GraphModule): string[] {
  const arg = model.graph.outputNode?.args[0];
  const list = Array.isArray(arg) ? arg : [arg];
  return list.filter((a): a is Node => a !== null && typeof a === 'object' && 'name' in a).map((a) => a.name);
}

/** A model output's numbers (a fixed-point output's integers, a float output's values) and whether they are floats. */
function valuesOf(v: unknown): { data: ArrayLike<number>; float: boolean } {
  if (v instanceof QTensor) return { data: v.ints(), float: false };
  if (v instanceof Tensor) return { data: v.values() as ArrayLike<number>, float: v.dtype === 'float32' };
  throw new CliError(`the model returns a ${typeof v}, not a tensor; qtk compare compares tensor outputs`);
}

function same(a: number, b: number, tol: FloatTolerance | null): boolean {
  if (a === b || (Number.isNaN(a) && Number.isNaN(b))) return true;
  return tol !== null && Math.abs(a - b) <= tol.atol + tol.rtol * Math.abs(a);
}

/** How many samples of batch `x` get the same values in every output from QTK and the runtime (floats within `tolerance`). */
async function identicalRows(
  model: GraphModule,
  ort: OrtModel,
  xs: readonly Tensor[],
  tolerance: FloatTolerance,
): Promise<number> {
  const k = xs[0]!.shape[0]!;
  const y = noGrad(() => model.call(...xs));
  const qtk = (Array.isArray(y) ? y : [y]).map(valuesOf);
  const runtime: RuntimeOutput[] = await ort.run(xs);
  const rowOk = new Array<boolean>(k).fill(true);
  qtk.forEach((q, o) => {
    const r = runtime[o];
    if (!r || r.data.length !== q.data.length) {
      rowOk.fill(false);
      return;
    }
    const per = q.data.length / k;
    const tol = q.float ? tolerance : null;
    for (let i = 0; i < q.data.length; i++) if (!same(q.data[i]!, r.data[i]!, tol)) rowOk[Math.floor(i / per)] = false;
  });
  return rowOk.filter(Boolean).length;
}

/**
 * Refuses a file whose metadata says it was exported for another march or from another model file than MODEL (files
 * exported before qtk export recorded them carry neither, and pass).
 */
function checkSameMarchAndModel(file: OnnxFile, modelPath: string, model: GraphModule): void {
  const fileMarch = metadataOf(file.model, MARCH_KEY);
  const modelMarch = modelInfoOf(model).march;
  if (fileMarch !== undefined && modelMarch !== null && fileMarch !== modelMarch)
    throw new CliError(
      `${file.path} was exported from a model for march '${fileMarch}', but ${modelPath} is for march '${modelMarch}': ` +
        `their integers cannot agree; compare ${file.path} with the '${fileMarch}' model file it was exported from, or export ${modelPath} ('qtk export ${modelPath} --out FILE.onnx') and compare with that`,
    );
  const fileHash = metadataOf(file.model, MODEL_SHA256_KEY);
  if (fileHash === undefined) return;
  const modelHash = createHash('sha256').update(readFileSync(modelPath)).digest('hex');
  if (fileHash !== modelHash)
    throw new CliError(
      `${file.path} was exported from another model file (SHA-256 ${fileHash.slice(0, 12)}…) than ${modelPath} (SHA-256 ${modelHash.slice(0, 12)}…): ` +
        `compare it with the model file it was exported from, or export ${modelPath} again ('qtk export ${modelPath} --out FILE.onnx')`,
    );
}
