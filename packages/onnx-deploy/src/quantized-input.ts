// A fixed-point QTensor in @qtk/onnx's export walk: its integers are the ONNX value, in their storage type.
import { QTensor } from '@qtk/fixed-point';
import { DataType, type ExportValue } from '@qtk/onnx';
import type { Tensor } from '@qtk/tensor';

/** An example input of a quantized export: a float tensor, or a QTensor for a segment that starts quantized. */
export type QuantizedInput = Tensor | QTensor;

const STORAGE_ELEM_OF_DATA: Record<string, number> = {
  int8: DataType.INT8,
  int16: DataType.INT16,
  int32: DataType.INT32,
  bool: DataType.BOOL,
};

/** The reader @qtk/onnx-deploy registers (registerExportValue): a QTensor as its integer tensor. */
export function readQTensor(value: unknown): ExportValue | undefined {
  if (!(value instanceof QTensor)) return undefined;
  return { data: value.data, elemType: STORAGE_ELEM_OF_DATA[value.data.dtype]! };
}
