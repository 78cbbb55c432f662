// The two operands of a fixed-point binary module as ONNX values: a quantized tensor argument as
// its integers in float64, a scalar slot (the conversion's one-element operand) as a constant.
import { QTensor, type ScalarOperand } from '@qtk/fixed-point';
import { Tensor } from '@qtk/tensor';
import { OnnxExportError, type ModuleExportStep } from '@qtk/onnx';
import { toDouble } from './int-emit.js';

/** One operand: the float64 ONNX value of a tensor's integers, or the integer of a scalar slot. */
export type Operand = { kind: 'tensor'; value: string } | { kind: 'scalar'; int: number };

/**
 * Slots 0 and 1 of a binary module's call: a slot with a scalar operand takes its integer (as the
 * module does, whatever the argument), every other slot must be a quantized tensor argument.
 * Tensor arguments are the step's inputs in order.
 */
export function binaryOperands(
  s: ModuleExportStep,
  scalars: readonly [ScalarOperand | null, ScalarOperand | null],
): [Operand, Operand] {
  let next = 0;
  const slot = (k: 0 | 1): Operand => {
    const arg = s.args[k];
    const input = arg instanceof QTensor || arg instanceof Tensor ? s.inputs[next++] : undefined;
    const scalar = scalars[k];
    if (scalar) return { kind: 'scalar', int: scalar.value };
    if (!(arg instanceof QTensor) || input === undefined)
      throw new OnnxExportError(
        `exportOnnx: operand ${k} of ${s.module.constructor.name} node '${s.name}' is not a quantized tensor; export the converted fixed-point model as QTK runs it`,
      );
    return { kind: 'tensor', value: toDouble(s.b, input, `${s.name}_in${k}`) };
  };
  const a = slot(0);
  return [a, slot(1)];
}
