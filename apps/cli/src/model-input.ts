import { existsSync, statSync } from 'node:fs';
import type { GraphModule } from '@qtk/ir';
import { DEFAULT_MAX_ELEMENTS, OnnxGraphModule, OnnxLimitError } from '@qtk/onnx';
import { importOnnx } from '@qtk/onnx/node';
import type { OptionSpec } from './args.js';
import { shownPath } from './display-path.js';
import { CliError } from './io.js';

/** Throws a clear error when `path` is not a readable file. */
export function requireFile(path: string, what: string): void {
  if (!existsSync(path)) throw new CliError(`${what} ${shownPath(path)} does not exist`);
  if (!statSync(path).isFile()) throw new CliError(`${what} ${shownPath(path)} is not a file`);
}

/** Imports an ONNX file (a model with one input). */
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

export function loadOnnx(path: string, maxElements?: unknown): OnnxGraphModule {
  requireFile(path, 'model');
  let gm: OnnxGraphModule;
  try {
    gm = importOnnx(path, maxElements !== undefined ? { maxElements: Number(maxElements) } : {});
  } catch (e) {
    if (e instanceof OnnxLimitError)
      throw new CliError(`${e.message}\nin qtk, raise the budget with --max-elements N for a model you trust`, {
        cause: e,
      });
    throw e;
  }
  if (gm.inputSpecs.length !== 1) {
    throw new CliError(
      `${path}: the model has ${gm.inputSpecs.length} inputs (${gm.inputSpecs.map((s) => s.onnxName).join(', ')}); qtk handles models with one input`,
    );
  }
  return gm;
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

/** sampleShapeOf for a declared input shape (`declared`: with the batch axis, null where free; null when unknown). */
export function sampleShapeFrom(
  declared: readonly (number | null)[] | null,
  inputShape?: readonly number[],
): (number | null)[] {
  if (inputShape) {
    if (declared) {
      const bad =
        declared.length !== inputShape.length || declared.some((d, i) => i > 0 && d !== null && d !== inputShape[i]);
      if (bad)
        throw new CliError(
          `wrong input shape: --input-shape ${fmt(inputShape)} does not match the model's input ${fmt(declared)} ('?' = any size)`,
        );
    }
    return inputShape.slice(1);
  }
  if (!declared) throw new CliError('the model does not declare its input shape; pass --input-shape N,C,H,W');
  if (declared.length === 0) throw new CliError('the model takes a scalar input; qtk needs a batched input');
  return declared.slice(1);
}

/** A concrete example shape (batch `n`, free dims 1). */
export function exampleShape(sampleShape: readonly (number | null)[], n: number): number[] {
  return [n, ...sampleShape.map((d) => d ?? 1)];
}
