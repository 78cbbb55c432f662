// qtk export of a model quantized from a user's ONNX file: the file keeps the ONNX input and output names and says
// in its metadata how to read the integer outputs (scale, dtype), the march and which model file it came from.
import '@qtk/march-bayes';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadModelFileSync } from '@qtk/core/node';
import { QTensor } from '@qtk/fixed-point';
import { decodeModel } from '@qtk/onnx';
import { Generator, rand } from '@qtk/tensor';
import * as ort from 'onnxruntime-node';
import { beforeAll, describe, expect, it } from 'vitest';
import { quantizeForSetup, run, tempDir, writeCalibBatch } from './testing/fixtures.js';

const TORCH_SMALL = join(__dirname, '../../../packages/onnx/fixtures/torch-small.onnx');
let dir: string;
let calib: string;
let modelPath: string;

beforeAll(async () => {
  dir = tempDir();
  calib = writeCalibBatch(dir, [16, 3, 16, 16], new Generator(2));
  modelPath = await quantizeForSetup(TORCH_SMALL, calib, join(dir, 'small.qtk'), { march: 'bayes' });
});

describe('qtk export of a quantized ONNX model', () => {
  it("keeps the ONNX names and records the outputs' scale and dtype: integers × scale = QTK's dequantized outputs", async () => {
    const out = join(dir, 'small-int.onnx');
    const r = await run('export', modelPath, '--out', out);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);

    const model = decodeModel(readFileSync(out));
    const meta = Object.fromEntries(model.metadata_props!.map((p) => [p.key, p.value!]));
    expect(meta['qtk.march']).toBe('bayes');
    expect(meta['qtk.model_sha256']).toBe(createHash('sha256').update(readFileSync(modelPath)).digest('hex'));
    const outputs = JSON.parse(meta['qtk.outputs']!) as { name: string; dtype: string; scale: number[]; axis: null }[];
    expect(outputs).toHaveLength(1);
    const [info] = outputs as [(typeof outputs)[0]];
    expect(info.name).toBe('probs');
    expect(info.axis).toBeNull();
    expect(info.scale).toHaveLength(1);
    expect(r.stdout).toContain(`outputs:   'probs' ${info.dtype}, scale ${info.scale[0]} (value = integer × scale;`);

    const session = await ort.InferenceSession.create(readFileSync(out));
    expect(session.inputNames).toEqual(['image']);
    expect(session.outputNames).toEqual(['probs']);
    const x = rand([5, 3, 16, 16], { low: -1, high: 1, generator: new Generator(9) });
    const got = (await session.run({ image: new ort.Tensor('float32', x.values() as Float32Array, [5, 3, 16, 16]) }))
      .probs!;
    await session.release();
    expect(got.type).toBe(info.dtype);
    const want = loadModelFileSync(modelPath).model.call(x) as QTensor;
    expect(want).toBeInstanceOf(QTensor);
    expect(want.data.dtype).toBe(info.dtype);
    const scaled = Array.from(got.data as Int8Array | Int16Array, (v) => Math.fround(v * info.scale[0]!));
    expect(scaled).toEqual(Array.from(want.dequantize().values()));
    expect(scaled.some((v) => v !== 0)).toBe(true);
  });

  it('an exported .onnx file keeps its names too', async () => {
    const out = join(dir, 'small-float.onnx');
    const r = await run('export', TORCH_SMALL, '--out', out);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("outputs:   'probs' float32");
    const model = decodeModel(readFileSync(out));
    expect(model.graph!.input!.map((i) => i.name)).toEqual(['image']);
    expect(model.graph!.output!.map((o) => o.name)).toEqual(['probs']);
    expect(model.metadata_props!.find((p) => p.key === 'qtk.march')).toBeUndefined();
  });
});
