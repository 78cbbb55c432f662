// The values the export walk writes as ONNX tensors: float Tensors here, and kinds other packages register (a
// fixed-point QTensor, registered by @qtk/onnx-deploy), so the walk never imports the packages that define them.
import { Tensor } from '@qtk/tensor';
import { DataType } from './onnx-schema.js';

/** A value as ONNX holds it: its tensor (a QTensor's integers) and the ONNX element type of that tensor. */
export interface ExportValue {
  readonly data: Tensor;
  readonly elemType: number;
}

/** Reads a value of one registered kind; undefined for every other value. */
export type ExportValueReader = (value: unknown) => ExportValue | undefined;

/** An example input that is not a float Tensor: a value of a registered kind (a fixed-point QTensor). */
export interface RegisteredValue {
  readonly shape: readonly number[];
}

/** A model input: a float tensor, or a quantized tensor for a segment that starts inside the quantized region. */
export type ExampleInput = Tensor | RegisteredValue;

const readers: ExportValueReader[] = [];

/** Registers a kind of value the walk writes as an ONNX tensor (idempotent). */
export function registerExportValue(reader: ExportValueReader): void {
  if (!readers.includes(reader)) readers.push(reader);
}

function tensorElemType(t: Tensor): number {
  return t.dtype === 'float32' ? DataType.FLOAT : t.dtype === 'bool' ? DataType.BOOL : DataType.INT64;
}

/** The value as ONNX holds it, or undefined when it is neither a Tensor nor of a registered kind. */
export function exportValueOf(value: unknown): ExportValue | undefined {
  if (value instanceof Tensor) return { data: value, elemType: tensorElemType(value) };
  for (const read of readers) {
    const v = read(value);
    if (v) return v;
  }
  return undefined;
}
