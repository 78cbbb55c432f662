// The shape each graph input is imported at: the declared dims, with free ones (dim_param or no
// value) taken from `inputShapes` / `exampleInputs`, else 1; what was defaulted is remembered so a
// failing import can say which input and dim to give.
import type { Tensor } from '@qtk/tensor';
import { OnnxInputShapeError } from '../errors.js';
import type { ValueInfoMsg } from '../onnx-schema.js';

/** A free dim of a graph input that the import set to a default because no shape was given for it. */
export interface DefaultedDim {
  /** The input's ONNX name. */
  readonly input: string;
  /** The axis. */
  readonly dim: number;
  /** The dim's symbolic name in the file (dim_param, e.g. 'N' or 'height'), when it has one. */
  readonly param?: string;
  /** The value the import used. */
  readonly value: number;
}

/** A declared input: one entry per axis, a number where fixed, else the dim_param name or null. */
export interface DeclaredInput {
  readonly name: string;
  readonly dims: readonly (number | string | null)[] | null;
}

/** The declared dims of a graph input (null when the file declares no shape). */
export function declaredInput(v: ValueInfoMsg): DeclaredInput {
  const dims = v.type?.tensor_type?.shape?.dim;
  return {
    name: v.name ?? '',
    dims: dims
      ? dims.map((d) =>
          d.dim_value !== undefined && d.dim_value !== null && Number(d.dim_value) >= 0
            ? Number(d.dim_value)
            : d.dim_param || null,
        )
      : null,
  };
}

const fmt = (dims: readonly (number | string | null)[]) => `[${dims.map((d) => d ?? '?').join(', ')}]`;

/**
 * The shape `input` is imported at, checked against its declaration: `given` (from inputShapes or
 * an example input) must have the declared rank and agree with every fixed dim; without it, free dims
 * become 1 and are added to `defaulted`.
 */
export function importShape(
  input: DeclaredInput,
  given: readonly number[] | undefined,
  option: string,
  defaulted: DefaultedDim[],
): number[] {
  const { name, dims } = input;
  if (given) {
    if (given.some((d) => !Number.isInteger(d) || d < 0))
      throw new OnnxInputShapeError(
        `importOnnx: ${option} gives input '${name}' the shape [${given.join(', ')}]; every dim must be a non-negative integer`,
      );
    if (dims && dims.length !== given.length)
      throw new OnnxInputShapeError(
        `importOnnx: ${option} gives input '${name}' the shape [${given.join(', ')}] (rank ${given.length}), ` +
          `but the model declares it ${fmt(dims)} (rank ${dims.length}); give ${dims.length} dims`,
      );
    dims?.forEach((d, k) => {
      if (typeof d === 'number' && d !== given[k])
        throw new OnnxInputShapeError(
          `importOnnx: ${option} gives input '${name}' the shape [${given.join(', ')}], but its dim ${k} is fixed at ${d} ` +
            `by the model (declared ${fmt(dims)}, '?' and names = free); keep ${d} there`,
        );
    });
    return [...given];
  }
  return (dims ?? []).map((d, k) => {
    if (typeof d === 'number') return d;
    defaulted.push({ input: name, dim: k, ...(d !== null ? { param: d } : {}), value: 1 });
    return 1;
  });
}

/** Checks that every name `inputShapes` gives is a graph input; the message lists the inputs. */
export function checkInputShapeNames(
  inputShapes: Readonly<Record<string, readonly number[]>>,
  inputs: readonly string[],
  exampleInputs: Readonly<Record<string, Tensor>> | undefined,
): void {
  for (const name of Object.keys(inputShapes)) {
    if (!inputs.includes(name))
      throw new OnnxInputShapeError(
        `importOnnx: inputShapes names '${name}', which is not an input of the model; its inputs are ${inputs.map((i) => `'${i}'`).join(', ') || 'none'}`,
      );
    const example = exampleInputs?.[name];
    const shape = inputShapes[name]!;
    if (example && (example.ndim !== shape.length || example.shape.some((d, k) => d !== shape[k])))
      throw new OnnxInputShapeError(
        `importOnnx: input '${name}' has the shape [${shape.join(', ')}] in inputShapes but [${example.shape.join(', ')}] in exampleInputs; give one`,
      );
  }
}

/** The dims of `defaulted` grouped by input, as 'dim 2 (H) and dim 3 (W)'. */
export function describeDefaulted(defaulted: readonly DefaultedDim[]): Map<string, string> {
  const byInput = new Map<string, string[]>();
  for (const d of defaulted) {
    const list = byInput.get(d.input) ?? [];
    list.push(`dim ${d.dim}${d.param ? ` (${d.param})` : ''}`);
    byInput.set(d.input, list);
  }
  return new Map(
    [...byInput].map(([input, list]) => [
      input,
      list.length === 1 ? list[0]! : `${list.slice(0, -1).join(', ')} and ${list[list.length - 1]}`,
    ]),
  );
}

/**
 * What to add to an import error when free input dims were set to 1 (in the API's terms; the CLI
 * says its own): which input, which dims, and the option that gives the real shape.
 */
export function defaultedDimsAdvice(defaulted: readonly DefaultedDim[], shapes: ReadonlyMap<string, number[]>): string {
  const lines = [...describeDefaulted(defaulted)].map(
    ([input, dims]) =>
      `  input '${input}': free ${dims} set to 1, so it was imported at [${shapes.get(input)?.join(', ')}]`,
  );
  const example = [...describeDefaulted(defaulted).keys()].map((i) => `${JSON.stringify(i)}: [...]`).join(', ');
  return (
    `the model's inputs have free dims and no shape was given for them:\n${lines.join('\n')}\n` +
    `if the failure comes from that size, import at the real shape: importOnnx(bytes, { inputShapes: { ${example} } }) (or exampleInputs)`
  );
}
