import { QTensor } from '@qtk/fixed-point';
import { type ModuleExportStep, OnnxExportError } from '@qtk/onnx';
import { tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { quantizedInput } from './int-emit.js';

const step = (arg: unknown) => ({ name: 'clamp_1', args: [arg] }) as unknown as ModuleExportStep;

describe('quantizedInput', () => {
  it("returns the step's first argument when it is a QTensor", () => {
    const x = new QTensor(tensor([3, -4], [2], { dtype: 'int8' }), [0.5], 'qint8');
    expect(quantizedInput(step(x), 'clamp')).toBe(x);
  });

  it('refuses a float input with an OnnxExportError naming the op and the node', () => {
    const fail = () => quantizedInput(step(tensor([1.5])), 'sum');
    expect(fail).toThrow(OnnxExportError);
    expect(fail).toThrow("exportOnnx: sum node 'clamp_1' has no quantized input");
  });
});
