// The seams through which another package (@qtk/onnx-deploy) extends the float export walk without @qtk/onnx
// importing it: values of a registered kind (a QTensor) as ONNX tensors, and the model kinds it exports. Run in a
// process of its own (vitest.config.ts): other test files load @qtk/onnx-deploy, which registers both.
import { symbolicTrace } from '@qtk/ir';
import { Linear, Module, PixelUnshuffle } from '@qtk/nn';
import { Generator, Tensor, randn } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { exportValueOf, registerExportValue } from './export-values.js';
import { isModelKindExported, registerModelKindExport } from './export-rules.js';
import { DataType, decodeModel, exportOnnxBytes, OnnxExportError } from './index.js';

class PassThrough extends Module {
  forward(x: Tensor): Tensor {
    return x;
  }
}

class Dense extends Module {
  readonly fc = new Linear(4, 3, { generator: new Generator(5) });
  forward(x: Tensor): Tensor {
    return this.fc.call(x);
  }
}

/** Integers of another package's value type (a stand-in for a fixed-point QTensor). */
class Stored {
  constructor(readonly data: Tensor) {}
  get shape(): readonly number[] {
    return this.data.shape;
  }
}

const int16 = (values: number[], shape: number[]) =>
  new Tensor({ data: Int16Array.from(values), shape, dtype: 'int16' });

describe('registerExportValue: values of a registered kind are written as ONNX tensors', () => {
  it('a Tensor is its own value: float32 as FLOAT, bool as BOOL, the integer types as INT64', () => {
    const x = randn([2, 3]);
    expect(exportValueOf(x)).toEqual({ data: x, elemType: DataType.FLOAT });
    const mask = new Tensor({ data: Uint8Array.of(1, 0), shape: [2], dtype: 'bool' });
    expect(exportValueOf(mask)?.elemType).toBe(DataType.BOOL);
    expect(exportValueOf({ shape: [2] })).toBeUndefined();
  });

  it('an unregistered example input is refused, naming it; once registered, its type and shape are the graph input', () => {
    const gm = symbolicTrace(new PassThrough());
    const stored = new Stored(int16([1, -2, 3, -4, 5, -6], [2, 3]));
    expect(() => exportOnnxBytes(gm, stored)).toThrow(OnnxExportError);
    expect(() => exportOnnxBytes(gm, stored)).toThrow(/example input 0 is neither a Tensor nor a registered value/);

    const read = (v: unknown) => (v instanceof Stored ? { data: v.data, elemType: DataType.INT16 } : undefined);
    registerExportValue(read);
    registerExportValue(read); // idempotent
    const model = decodeModel(exportOnnxBytes(gm, stored, { dynamicBatch: false }));
    const input = model.graph?.input?.[0]?.type?.tensor_type;
    expect(input?.elem_type).toBe(DataType.INT16);
    expect(input?.shape?.dim?.map((d) => d.dim_value)).toEqual([2, 3]);
    const output = model.graph?.output?.[0]?.type?.tensor_type;
    expect(output?.elem_type).toBe(DataType.INT16);
    expect(model.graph?.node?.map((n) => n.op_type)).toEqual(['Identity']);
  });
});

class WithUnshuffle extends Module {
  readonly inner = new PixelUnshuffle(2);
  forward(x: Tensor): Tensor {
    return this.inner.call(x);
  }
}

describe('registerModelKindExport: the walk refuses a quantized model whose kind no package exports', () => {
  it('a module without an ONNX form, before @qtk/onnx-deploy registered anything, is refused naming the package', () => {
    const gm = symbolicTrace(new WithUnshuffle());
    expect(() => exportOnnxBytes(gm, randn([1, 1, 4, 4]))).toThrow(
      "module 'inner' (PixelUnshuffle) has no ONNX form yet (fused, QAT and fixed-point modules export through @qtk/onnx-deploy: import it before exporting)",
    );
  });

  it("a model recorded as 'qat' is refused until its kind is registered, then exported", () => {
    const gm = symbolicTrace(new Dense());
    const x = randn([2, 4], { generator: new Generator(6) });
    gm.meta = { ...gm.meta, kind: 'qat' };
    expect(isModelKindExported('qat')).toBe(false);
    expect(() => exportOnnxBytes(gm, x)).toThrow(OnnxExportError);
    expect(() => exportOnnxBytes(gm, x)).toThrow(
      /is a qat model, and no export rules for qat models are registered: import '@qtk\/onnx-deploy'/,
    );

    gm.meta = { ...gm.meta, kind: 'float' };
    expect(decodeModel(exportOnnxBytes(gm, x)).graph?.node?.map((n) => n.op_type)).toEqual(['Gemm', 'Identity']);

    registerModelKindExport('qat');
    expect(isModelKindExported('qat')).toBe(true);
    gm.meta = { ...gm.meta, kind: 'qat' };
    expect(decodeModel(exportOnnxBytes(gm, x)).graph?.node?.map((n) => n.op_type)).toEqual(['Gemm', 'Identity']);
  });
});
