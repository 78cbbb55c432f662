import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { symbolicTrace } from '@qtk/ir';
import { Conv2d, ReLU, Sequential } from '@qtk/nn';
import { Generator, randn } from '@qtk/tensor';
import {
  OnnxError,
  OnnxExternalDataError,
  OnnxFormatError,
  OnnxInputShapeError,
  UnsupportedOnnxOpError,
  exportOnnxBytes,
  importOnnx,
} from '../index.js';
import { importOnnx as importOnnxFile } from '../node.js';
import { DataType } from '../onnx-schema.js';
import { handMadeModel } from '../testing/hand-made-model.js';

const dir = mkdtempSync(join(tmpdir(), 'qtk-onnx-err-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const model = handMadeModel;

describe('import errors', () => {
  it('lists every unsupported node with name, op type, domain and opset', () => {
    const bytes = model([
      { op_type: 'Relu', name: 'r', input: ['x'], output: ['a'] },
      { op_type: 'Det', name: 'det1', input: ['a'], output: ['b'] },
      { op_type: 'MyOp', domain: 'com.example', name: 'custom', input: ['b'], output: ['c'] },
      { op_type: 'Relu', name: 'r2', input: ['c'], output: ['d'] },
      { op_type: 'Celu', name: 'celu', input: ['x'], output: ['y'] },
    ]);
    let err: unknown;
    try {
      importOnnx(bytes);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(UnsupportedOnnxOpError);
    const nodes = (err as UnsupportedOnnxOpError).nodes;
    expect(nodes.map((n) => [n.name, n.opType, n.domain, n.opset])).toEqual([
      ['det1', 'Det', '', 13],
      ['custom', 'MyOp', 'com.example', 13],
      ['celu', 'Celu', '', 13],
    ]);
    expect((err as Error).message).toContain("'custom' com.example::MyOp (opset 13)");
  });

  it('says which attribute makes a supported op unsupported', () => {
    const bytes = model([{ op_type: 'Reshape', name: 'rs', input: ['x', 'x'], output: ['y'] }]);
    expect(() => importOnnx(bytes)).toThrow(/'rs' ai\.onnx::Reshape \(opset 13\): the target shape must be a constant/);
  });

  it('rejects external data with how to fix it', () => {
    const bytes = model([{ op_type: 'Add', name: 'add', input: ['x', 'w'], output: ['y'] }], {
      initializer: [
        {
          name: 'w',
          dims: [4],
          data_type: DataType.FLOAT,
          data_location: 1,
          external_data: [{ key: 'location', value: 'weights.bin' }],
        },
      ],
    });
    expect(() => importOnnx(bytes)).toThrow(OnnxExternalDataError);
    expect(() => importOnnx(bytes)).toThrow(/'weights\.bin'.*save_as_external_data=False/);
  });

  it('rejects truncated and non-ONNX files as malformed', () => {
    const gm = symbolicTrace(new Sequential(new Conv2d(1, 4, 3, { generator: new Generator(1) }), new ReLU()).eval());
    const good = exportOnnxBytes(gm, [randn([1, 1, 28, 28])]);
    const truncated = join(dir, 'truncated.onnx');
    writeFileSync(truncated, good.slice(0, Math.floor(good.length / 2)));
    expect(() => importOnnxFile(truncated)).toThrow(OnnxFormatError);
    expect(() => importOnnxFile(truncated)).toThrow(`importOnnx: '${truncated}' is not a valid ONNX model`);
    expect(() => importOnnxFile(join(dir, 'missing.onnx'))).toThrow(/importOnnx: cannot read '.*missing\.onnx'/);
    expect(() => importOnnx(new TextEncoder().encode('definitely not a protobuf model'))).toThrow(
      'importOnnx: the bytes are not a valid ONNX model',
    );
    expect(() => importOnnx(new Uint8Array(0))).toThrow(OnnxFormatError);
  });

  it('bytes: `source` names them in errors; a path is refused with a pointer to @qtk/onnx/node', () => {
    const good = model([{ op_type: 'Relu', name: 'r', input: ['x'], output: ['y'] }]);
    expect(() => importOnnx(good.slice(0, 20), { source: 'picked.onnx' })).toThrow(
      "importOnnx: 'picked.onnx' is not a valid ONNX model",
    );
    expect(() => importOnnx(good, { source: 'picked.onnx', maxElements: -1 })).toThrow(
      "importOnnx('picked.onnx'): maxElements must be a positive number, got -1",
    );
    const path = 'model.onnx' as unknown as Uint8Array;
    expect(() => importOnnx(path)).toThrow(OnnxError);
    expect(() => importOnnx(path)).toThrow(
      "importOnnx: expected the model's bytes (a Uint8Array), got the string 'model.onnx'; importOnnx from @qtk/onnx/node reads a file path",
    );
  });

  it('checks input shapes at run time', () => {
    const gm = importOnnx(model([{ op_type: 'Relu', name: 'r', input: ['x'], output: ['y'] }]));
    expect((gm.call(randn([3, 4])) as { shape: number[] }).shape).toEqual([3, 4]);
    expect(() => gm.call(randn([3, 5]))).toThrow(OnnxInputShapeError);
    expect(() => gm.call(randn([3, 5]))).toThrow("input 'x' must have shape [?, 4] ('?' = any size), got [3, 5]");
    expect(() => gm.call(randn([4]))).toThrow(OnnxInputShapeError);
  });

  it('rejects opsets it does not know, above 21 and below 1', () => {
    const relu = [{ op_type: 'Relu', name: 'r', input: ['x'], output: ['y'] }];
    expect(() => importOnnx(model(relu, {}, 22))).toThrow(
      'importOnnx: the model uses ai.onnx opset 22; QTK imports opsets 1 to 21 (convert it with onnx.version_converter, e.g. to 21)',
    );
    expect(() => importOnnx(model(relu, {}, 0))).toThrow(/opset 0; QTK imports opsets 1 to 21/);
    expect((importOnnx(model(relu, {}, 21)).call(randn([2, 4])) as { shape: number[] }).shape).toEqual([2, 4]);
  });
});
