// --input-shape: the shape the ONNX import computes the model at (free dims take it), and the shape of
// the samples. One shape for a one-input model ('1,3,224,224'), or NAME=SHAPE per input, ';'-separated.
import { readFileSync } from 'node:fs';
import { decodeModel, describeDefaulted, type OnnxError } from '@qtk/onnx';
import { closeNames, didYouMean } from '@qtk/tensor';
import { CliError } from './io.js';

/** A graph input of an ONNX file as it declares itself: null for a free dim, null shape when undeclared. */
export interface DeclaredInput {
  readonly name: string;
  readonly shape: readonly (number | null)[] | null;
}

/** The parsed option: one shape without a name, or shapes by input name. */
export interface InputShapeOption {
  readonly plain?: number[];
  readonly named: ReadonlyMap<string, number[]>;
}

/** Parses '1,1,28,28' (or '1x1x28x28'). */
export function parseShape(text: string, option: string): number[] {
  const dims = text.split(/[,x×]/).map((d) => Number(d.trim()));
  if (dims.length === 0 || dims.some((d) => !Number.isInteger(d) || d <= 0)) {
    throw new CliError(`${option} must be positive integers separated by commas (e.g. 1,1,28,28), got '${text}'`, {
      exitCode: 2,
    });
  }
  return dims;
}

const fmt = (s: readonly (number | null)[]) => `[${s.map((d) => d ?? '?').join(', ')}]`;

export function parseInputShapeOption(text: string): InputShapeOption {
  if (!text.includes('=')) return { plain: parseShape(text, '--input-shape'), named: new Map() };
  const named = new Map<string, number[]>();
  for (const entry of text.split(';').filter((e) => e.trim() !== '')) {
    const eq = entry.lastIndexOf('=');
    const name = entry.slice(0, eq).trim();
    if (eq < 0 || name === '')
      throw new CliError(
        `--input-shape: '${entry}' is not NAME=SHAPE; give one shape (1,3,224,224) or NAME=SHAPE per input separated by ';' (input=1,3,224,224;mask=1,224,224)`,
        { exitCode: 2 },
      );
    if (named.has(name)) throw new CliError(`--input-shape gives input '${name}' twice`, { exitCode: 2 });
    named.set(name, parseShape(entry.slice(eq + 1), `--input-shape ${name}=`));
  }
  return { named };
}

/** The graph inputs an ONNX file declares (initializers left out), read without importing the model. */
export function declaredInputsOf(path: string): DeclaredInput[] {
  const model = decodeModel(new Uint8Array(readFileSync(path)));
  const initializers = new Set((model.graph?.initializer ?? []).map((t) => t.name));
  return (model.graph?.input ?? [])
    .filter((v) => !initializers.has(v.name))
    .map((v) => {
      const dims = v.type?.tensor_type?.shape?.dim;
      return {
        name: v.name ?? '',
        shape: dims
          ? dims.map((d) => (d.dim_value != null && Number(d.dim_value) >= 0 ? Number(d.dim_value) : null))
          : null,
      };
    });
}

/**
 * The import's inputShapes for --input-shape, checked against what the model declares: every name is an
 * input, a shape has the input's rank and keeps its fixed dims. Errors name the input and the dim.
 */
export function importShapesFor(option: InputShapeOption, inputs: readonly DeclaredInput[]): Record<string, number[]> {
  const names = inputs.map((i) => i.name);
  const shapes: Record<string, number[]> = {};
  if (option.plain && inputs.length === 1) shapes[names[0]!] = option.plain;
  for (const [name, shape] of namedShapes(option, names)) shapes[name] = shape;
  for (const input of inputs) {
    const shape = shapes[input.name];
    if (!shape || !input.shape) continue;
    checkAgainstDeclared(shape, input, names.length > 1);
    // the batch qtk runs at is its own (--batch); a model that fixes it is imported at its own
    const batch = input.shape[0];
    if (typeof batch === 'number') shapes[input.name] = [batch, ...shape.slice(1)];
  }
  return shapes;
}

function checkAgainstDeclared(shape: readonly number[], input: DeclaredInput, named: boolean): void {
  const declared = input.shape!;
  const what = `wrong input shape: --input-shape ${named ? `${input.name}=` : ''}${fmt(shape)} does not match the model's input ${named ? `'${input.name}' ` : ''}${fmt(declared)} ('?' = any size)`;
  // exit code 1, as every shape that does not fit the model (the option itself is well formed)
  if (declared.length !== shape.length)
    throw new CliError(`${what}: it has ${declared.length} dims, not ${shape.length}`);
  const k = declared.findIndex((d, i) => i > 0 && d !== null && d !== shape[i]);
  if (k >= 0) throw new CliError(`${what}: dim ${k} of input '${input.name}' is fixed at ${declared[k]}`);
}

/**
 * --input-shape's NAME=SHAPE entries, every name an input of the model (`names`); a bare shape for a model of
 * several inputs is a usage error asking for NAME=SHAPE, a name no input has one naming the closest.
 */
export function namedShapes(
  option: InputShapeOption | undefined,
  names: readonly string[],
): ReadonlyMap<string, number[]> {
  if (!option) return new Map();
  if (option.plain && names.length !== 1)
    throw new CliError(
      `--input-shape ${option.plain.join(',')} names no input, but the model has ${names.length} (${names.join(', ')}); ` +
        `give each its shape: --input-shape '${names.map((n) => `${n}=...`).join(';')}'`,
      { exitCode: 2 },
    );
  for (const name of option.named.keys()) {
    if (names.includes(name)) continue;
    const close = closeNames(name, [...names]);
    throw new CliError(
      `--input-shape names '${name}', which is not an input of the model` +
        didYouMean(close.slice(0, 1)) +
        ` (its inputs: ${names.join(', ')})`,
      { exitCode: 2 },
    );
  }
  return option.named;
}

/** The shape --input-shape gives the model's one input (named `inputName` when known), or undefined. */
export function oneInputShape(option: InputShapeOption | undefined, inputName?: string): number[] | undefined {
  if (!option) return undefined;
  if (option.plain) return option.plain;
  if (inputName !== undefined) return option.named.get(inputName);
  if (option.named.size === 1) return [...option.named.values()][0];
  throw new CliError('--input-shape: this model takes one input; give one shape (e.g. 1,3,224,224)', { exitCode: 2 });
}

/**
 * What to add to an import failure after free input dims were set to 1, in qtk's terms: which input and
 * dims, the shape used, and the --input-shape that gives the real one.
 */
export function defaultedDimsHint(info: NonNullable<OnnxError['defaultedDims']>, inputCount: number): string {
  const lines = [...describeDefaulted(info.dims)].map(
    ([input, dims]) =>
      `  input '${input}': free ${dims} set to 1, so it was imported at [${info.importShapes[input]?.join(', ')}]`,
  );
  const template = (input: string) =>
    (info.importShapes[input] ?? [])
      .map((v, k) => {
        const d = info.dims.find((x) => x.input === input && x.dim === k);
        // qtk runs its own batch: any size does for dim 0
        return d && k > 0 ? (d.param ?? `D${k}`) : String(v);
      })
      .join(',');
  const inputs = [...describeDefaulted(info.dims).keys()];
  const example =
    inputCount === 1 && inputs.length === 1
      ? template(inputs[0]!)
      : `'${inputs.map((i) => `${i}=${template(i)}`).join(';')}'`;
  return (
    `the model's inputs have free dims and no --input-shape gave them:\n${lines.join('\n')}\n` +
    `if the failure comes from that size, give the real shape: --input-shape ${example}`
  );
}
