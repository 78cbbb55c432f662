// The inputs a model takes, each by its name with the shape of one sample: from an imported ONNX model, from a QTK
// model file (what qtk quantize recorded), or from an ONNX file run in onnxruntime. Every command that feeds a
// model data asks here, so a model with several inputs is fed the same way everywhere.
import type { GraphModule } from '@qtk/ir';
import { DataType, OnnxGraphModule } from '@qtk/onnx';
import { Generator, rand, type Tensor } from '@qtk/tensor';
import { type InputShapeOption, namedShapes, oneInputShape } from './input-shape-option.js';
import { ioNamesOf, savedIoNames } from './io-names.js';
import { CliError } from './io.js';
import { exampleShape, inputShapeFor, sampleShapeFrom, sampleShapeOf } from './model-input.js';
import { savedShape } from './model-source.js';
import type { OnnxFile, OnnxInput } from './onnx-file.js';

/** One input of a model as qtk feeds it. */
export interface SampleInput {
  /** The ONNX input name (a model file: the one qtk quantize saved, else its graph input's name). */
  readonly name: string;
  /** The shape of one sample (the input's shape without the batch axis; null where free); throws when unknown. */
  sampleShape(): (number | null)[];
}

/** The model-file meta key of a several-input model's inputs: [{ name, shape: [null, ...] }] in graph order. */
export const INPUTS_META_KEY = 'inputs';

/**
 * The inputs of `model` (an imported ONNX model, or a model file's model with its `meta`), their shapes refined
 * by --input-shape. A one-input model is read as qtk always read it; with several, --input-shape must name them.
 */
export function modelInputs(
  model: GraphModule,
  option: InputShapeOption | undefined,
  meta: Record<string, unknown> = {},
): SampleInput[] {
  const onnx = model instanceof OnnxGraphModule ? model : null;
  const placeholders = model.graph.placeholders;
  const names = inputNames(model, meta);
  if (placeholders.length <= 1) {
    const shape = inputShapeFor(model, option) ?? savedShape(meta);
    return [floatOnly(onnx, 0, { name: names[0] ?? 'input', sampleShape: () => sampleShapeOf(model, shape) })];
  }
  const given = namedShapes(option, names);
  const saved = savedInputShapes(meta, names);
  const declared = names.map((_, i) => (onnx ? (onnx.inputSpecs[i]?.shape ?? null) : (saved?.[i] ?? null)));
  checkSameBatch(names.map((name, i) => ({ name, shape: declared[i]! })));
  return names.map((name, i) =>
    floatOnly(onnx, i, { name, sampleShape: () => sampleShapeFrom(declared[i]!, given.get(name), name) }),
  );
}

/** An imported input that is not float32 cannot take qtk's samples: its sampleShape says so (inspect still works). */
function floatOnly(onnx: OnnxGraphModule | null, i: number, input: SampleInput): SampleInput {
  const spec = onnx?.inputSpecs[i];
  if (!spec || spec.dtype === 'float32') return input;
  return {
    name: input.name,
    sampleShape: () => {
      const kind = spec.dtype === 'bool' ? 'a bool input' : `an integer input (${spec.dtype} in QTK)`;
      throw new CliError(`the model's input '${spec.onnxName}' is ${kind}, not float32; ${NON_FLOAT_ADVICE}`);
    },
  };
}

/** The float32 inputs of an ONNX file run in onnxruntime, their shapes refined by --input-shape. */
export function fileInputs(file: OnnxFile, option: InputShapeOption | undefined): SampleInput[] {
  const inputs = floatInputs(file);
  if (inputs.length === 1) {
    const input = inputs[0]!;
    return [{ name: input.name, sampleShape: () => sampleShapeFrom(input.shape, oneInputShape(option, input.name)) }];
  }
  const given = namedShapes(
    option,
    inputs.map((i) => i.name),
  );
  checkSameBatch(inputs.map((i) => ({ name: i.name, shape: i.shape })));
  return inputs.map((input) => ({
    name: input.name,
    sampleShape: () => sampleShapeFrom(input.shape, given.get(input.name), input.name),
  }));
}

/**
 * Every input is fed rows of the same samples, so inputs that fix their batch size (dim 0) must fix the same one
 * (the ONNX test data's matrix products take [2, 3] and [3, 4]: not batches of samples).
 */
function checkSameBatch(inputs: readonly { name: string; shape: readonly (number | null)[] | null }[]): void {
  const fixed = inputs.filter((i) => typeof i.shape?.[0] === 'number');
  const first = fixed[0];
  const other = fixed.find((i) => i.shape![0] !== first!.shape![0]);
  if (!first || !other) return;
  const fmt = (s: readonly (number | null)[]) => `[${s.map((d) => d ?? '?').join(', ')}]`;
  throw new CliError(
    `the model's inputs fix different batch sizes: '${first.name}' ${fmt(first.shape!)} and '${other.name}' ${fmt(other.shape!)} (dim 0: ${first.shape![0]} and ${other.shape![0]}); ` +
      'qtk feeds every input one row per sample, so their first dims must be the same batch',
  );
}

const TYPE_NAMES: Readonly<Record<number, string>> = Object.fromEntries(
  Object.entries(DataType).map(([name, code]) => [code, name.toLowerCase()]),
);

/** An ONNX element type for a message: 'int64 (ONNX element type 7)'. */
export function elementTypeText(elemType: number): string {
  return `${TYPE_NAMES[elemType] ?? 'unknown'} (ONNX element type ${elemType})`;
}

const NON_FLOAT_ADVICE =
  'qtk feeds float32 samples; models with integer inputs (token ids into a Gather, say) are not supported yet';

/** The inputs of an ONNX file, every one float32; an error names an input of another type. */
export function floatInputs(file: OnnxFile): OnnxInput[] {
  const other = file.inputs.find((i) => i.elemType !== DataType.FLOAT);
  if (other)
    throw new CliError(
      `${file.path}: the input '${other.name}' is ${elementTypeText(other.elemType)}; ${NON_FLOAT_ADVICE}`,
    );
  if (file.inputs.length === 0) throw new CliError(`${file.path}: the model has no inputs; qtk feeds models data`);
  return file.inputs;
}

/** The ONNX names of the model's inputs: an import's, those qtk quantize saved, else the graph's placeholder names. */
function inputNames(model: GraphModule, meta: Record<string, unknown>): string[] {
  const placeholders = model.graph.placeholders;
  const known = ioNamesOf(model) ?? savedIoNames(meta);
  if (known && known.inputs.length === placeholders.length) return [...known.inputs];
  return placeholders.map((p) => p.name);
}

/** The shapes a model file of several inputs recorded (meta.inputs), in the order of `names`; undefined when absent. */
function savedInputShapes(
  meta: Record<string, unknown>,
  names: readonly string[],
): ((number | null)[] | null)[] | undefined {
  const saved = meta[INPUTS_META_KEY];
  if (!Array.isArray(saved)) return undefined;
  const byName = new Map<string, (number | null)[]>();
  for (const entry of saved as { name?: unknown; shape?: unknown }[]) {
    if (typeof entry?.name !== 'string' || !Array.isArray(entry.shape)) continue;
    byName.set(
      entry.name,
      entry.shape.map((d) => (typeof d === 'number' ? d : null)),
    );
  }
  return names.map((n) => byName.get(n) ?? null);
}

/**
 * What qtk quantize records of the inputs: a one-input model its shape as `inputShape` ([null, ...], as it always
 * did); a model of several each input's name and shape as `inputs` ([{ name, shape: [null, ...] }], graph order).
 */
export function inputShapesMeta(inputs: readonly SampleInput[]): Record<string, unknown> {
  if (inputs.length === 1) return { inputShape: [null, ...inputs[0]!.sampleShape()] };
  return { [INPUTS_META_KEY]: inputs.map((i) => ({ name: i.name, shape: [null, ...i.sampleShape()] })) };
}

/** Seeded random examples in [-1, 1], one per input, of batch `n` (free dims 1): an export's or a trial's inputs. */
export function randomExamples(inputs: readonly SampleInput[], n: number): Tensor[] {
  const generator = new Generator(0);
  return inputs.map((i) => rand(exampleShape(i.sampleShape(), n), { low: -1, high: 1, generator }));
}

/** The shapes of the inputs for a report: '[batch, 3, 224, 224]', or "'a' [batch, 1, 8, 8], 'b' [batch, 6]". */
export function describeInputShapes(inputs: readonly SampleInput[]): string {
  const shape = (i: SampleInput) =>
    `[batch${i
      .sampleShape()
      .map((d) => `, ${d ?? '?'}`)
      .join('')}]`;
  if (inputs.length === 1) return shape(inputs[0]!);
  return inputs.map((i) => `'${i.name}' ${shape(i)}`).join(', ');
}

/** The data's sample shapes for a report: 'shape [1, 28, 28]', or "2 inputs ('a' [1, 8, 8], 'b' [6])". */
export function sampleShapesText(inputs: readonly SampleInput[], data: readonly Tensor[]): string {
  const shape = (x: Tensor) => `[${x.shape.slice(1).join(', ')}]`;
  if (data.length === 1) return `shape ${shape(data[0]!)}`;
  return `${data.length} inputs (${inputs.map((input, i) => `'${input.name}' ${shape(data[i]!)}`).join(', ')})`;
}
