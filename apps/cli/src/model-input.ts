import { existsSync, statSync } from 'node:fs';
import type { GraphModule } from '@qtk/ir';
import { DEFAULT_MAX_ELEMENTS, OnnxError, OnnxGraphModule, OnnxLimitError } from '@qtk/onnx';
import { importOnnx } from '@qtk/onnx/node';
import type { OptionSpec } from './args.js';
import { shownPath } from './display-path.js';
import {
  declaredInputsOf,
  defaultedDimsHint,
  importShapesFor,
  type InputShapeOption,
  oneInputShape,
  parseInputShapeOption,
  parseShape,
} from './input-shape-option.js';
import { CliError } from './io.js';

/** Throws a clear error when `path` is not a readable file. */
export function requireFile(path: string, what: string): void {
  if (!existsSync(path)) throw new CliError(`${what} ${shownPath(path)} does not exist`);
  if (!statSync(path).isFile()) throw new CliError(`${what} ${shownPath(path)} is not a file`);
}

/** The --max-elements option of the commands that import ONNX (the import's budget, @qtk/onnx's maxElements). */
export const MAX_ELEMENTS_OPTION: Readonly<Record<string, OptionSpec>> = {
  'max-elements': {
    type: 'number',
    value: 'N',
    description: `ONNX import budget: the most elements one tensor may hold while importing (default ${DEFAULT_MAX_ELEMENTS}); raise it for large models you trust`,
    integer: true,
    min: 1,
  },
};

/** The --input-shape option of the commands that take a model (the spelling is input-shape-option.ts's). */
export const INPUT_SHAPE_OPTION: Readonly<Record<string, OptionSpec>> = {
  'input-shape': {
    type: 'string',
    value: 'N,C,H,W',
    description:
      "the model's input shape: the ONNX import computes the model at it (free dims) and samples take it; NAME=SHAPE;... for several inputs",
  },
};

/** --input-shape parsed (undefined when not given). */
export function inputShapeOption(o: Readonly<Record<string, unknown>>): InputShapeOption | undefined {
  return o['input-shape'] !== undefined ? parseInputShapeOption(String(o['input-shape'])) : undefined;
}

/**
 * Imports an ONNX file at the shape --input-shape gives; an import that fails
 * after free dims were set to 1 says which, and the --input-shape that gives them.
 */
export function loadOnnx(
  path: string,
  options: { maxElements?: unknown; inputShape?: InputShapeOption | undefined } = {},
): OnnxGraphModule {
  requireFile(path, 'model');
  const declared = options.inputShape ? declaredInputsOf(path) : undefined;
  const inputShapes = options.inputShape && declared ? importShapesFor(options.inputShape, declared) : undefined;
  let gm: OnnxGraphModule;
  try {
    gm = importOnnx(path, {
      ...(options.maxElements !== undefined ? { maxElements: Number(options.maxElements) } : {}),
      ...(inputShapes ? { inputShapes } : {}),
    });
  } catch (e) {
    if (e instanceof OnnxLimitError)
      throw new CliError(`${e.message}\nin qtk, raise the budget with --max-elements N for a model you trust`, {
        cause: e,
      });
    if (OnnxError.isInstance(e) && e.defaultedDims) {
      const { advice, importShapes } = e.defaultedDims;
      const hint = defaultedDimsHint(e.defaultedDims, Object.keys(importShapes).length);
      throw new CliError(e.message.replace(advice, hint), { cause: e });
    }
    throw e;
  }
  return gm;
}

/** Parses '28x28' (width × height) or '28' (square). */
export function parseSize(text: string): [number, number] {
  const d = parseShape(text, '--size');
  if (d.length === 1) return [d[0]!, d[0]!];
  if (d.length !== 2) throw new CliError(`--size must be WxH (e.g. 28x28), got '${text}'`, { exitCode: 2 });
  return [d[0]!, d[1]!];
}

/** Parses '0.5' or '0.485,0.456,0.406'. */
export function parseFloats(text: string, option: string): number[] {
  const v = text.split(',').map((d) => Number(d.trim()));
  if (v.some((x) => !Number.isFinite(x)))
    throw new CliError(`${option} must be numbers separated by commas, got '${text}'`, { exitCode: 2 });
  return v;
}

const fmt = (s: readonly (number | null)[]) => `[${s.map((d) => d ?? '?').join(', ')}]`;

/**
 * The shape of one sample (the model's input shape without the batch axis; null where free): from
 * the ONNX declaration, refined by --input-shape (which must agree with the declared dims).
 */
export function sampleShapeOf(gm: GraphModule, inputShape?: readonly number[]): (number | null)[] {
  return sampleShapeFrom(gm instanceof OnnxGraphModule ? (gm.inputSpecs[0]?.shape ?? null) : null, inputShape);
}

/**
 * sampleShapeOf for a declared input shape (`declared`: with the batch axis, null where free; null when unknown).
 * `inputName`: the input of a model of several, named in the errors.
 */
export function sampleShapeFrom(
  declared: readonly (number | null)[] | null,
  inputShape?: readonly number[],
  inputName?: string,
): (number | null)[] {
  const input = inputName === undefined ? 'input' : `input '${inputName}'`;
  const option = inputName === undefined ? '--input-shape ' : `--input-shape ${inputName}=`;
  if (inputShape) {
    if (declared) {
      const bad =
        declared.length !== inputShape.length || declared.some((d, i) => i > 0 && d !== null && d !== inputShape[i]);
      if (bad)
        throw new CliError(
          `wrong input shape: ${option}${fmt(inputShape)} does not match the model's ${input} ${fmt(declared)} ('?' = any size)`,
        );
    }
    return inputShape.slice(1);
  }
  if (!declared)
    throw new CliError(
      inputName === undefined
        ? 'the model does not declare its input shape; pass --input-shape N,C,H,W'
        : `the model does not declare the shape of its input '${inputName}'; pass --input-shape '${inputName}=N,...' (NAME=SHAPE per input, ';' between)`,
    );
  if (declared.length === 0)
    throw new CliError(
      `the model takes a scalar ${inputName === undefined ? 'input' : `input '${inputName}'`}; qtk needs a batched input`,
    );
  return declared.slice(1);
}

/** The shape --input-shape gives `model`'s one input (by its ONNX name when it is an imported model). */
export function inputShapeFor(model: GraphModule, option: InputShapeOption | undefined): number[] | undefined {
  return oneInputShape(option, model instanceof OnnxGraphModule ? model.inputSpecs[0]?.onnxName : undefined);
}

/** A concrete example shape (batch `n`, free dims 1). */
export function exampleShape(sampleShape: readonly (number | null)[], n: number): number[] {
  return [n, ...sampleShape.map((d) => d ?? 1)];
}
