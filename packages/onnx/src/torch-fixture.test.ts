import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { deserializeGraphModule, serializeGraphModule } from '@qtk/ir';
import { Conv2d, Hardswish, Linear, MaxPool2d, Upsample, rawToTensor } from '@qtk/nn';
import { readNpy } from '@qtk/nn/node';
import { Generator, type Tensor, randn } from '@qtk/tensor';
import * as ort from 'onnxruntime-node';
import { exportOnnxBytes } from './index.js';
import { importOnnx } from './node.js';

// Made by fixtures/make-torch-fixture.py (python3-torch): conv, BN folded by PyTorch, grouped conv, clamp,
// residual add, max pools, nearest upsample, hardswish, view(batch, -1) through Shape/Gather/Concat, Gemm, softmax.
const fixture = (f: string) => fileURLToPath(new URL(`../fixtures/${f}`, import.meta.url));

describe('a model exported by PyTorch', () => {
  const path = fixture('torch-small.onnx');
  const gm = importOnnx(path);

  it("matches PyTorch's outputs", () => {
    const x = rawToTensor(readNpy(fixture('torch-small-input.npy')));
    const want = rawToTensor(readNpy(fixture('torch-small-output.npy')));
    const got = gm.call(x) as Tensor;
    expect(got.shape).toEqual(want.shape);
    const w = want.values() as Float32Array;
    const g = got.values() as Float32Array;
    for (let i = 0; i < w.length; i++) expect(Math.abs(g[i]! - w[i]!)).toBeLessThan(1e-5 + 1e-4 * Math.abs(w[i]!));
  });

  it('is built from nn modules named after the nodes, with the shape subgraph folded', () => {
    const mods = new Map(gm.namedChildren());
    expect(mods.get('conv1')).toBeInstanceOf(Conv2d);
    expect((mods.get('conv2') as Conv2d).groups).toBe(2);
    expect(mods.get('pool')).toBeInstanceOf(MaxPool2d);
    expect(mods.get('up')).toBeInstanceOf(Upsample);
    expect(mods.get('fc1')).toBeInstanceOf(Linear);
    expect(mods.get('act')).toBeInstanceOf(Hardswish); // HardSigmoid(1/6, 1/2) · x at opset 13
    const targets = gm.graph.nodes.map((n) => n.target);
    expect(targets.filter((t) => ['onnx.gather', 'onnx.cast', 'onnx.unsqueeze', 'cat'].includes(t))).toEqual([]);
    expect(targets).toContain('onnx.reshape');
  });

  it('keeps the batch dynamic (agrees with onnxruntime-node at batch 1 and 5)', async () => {
    const session = await ort.InferenceSession.create(readFileSync(path), {
      executionProviders: ['cpu'],
      intraOpNumThreads: 1,
      interOpNumThreads: 1,
    });
    for (const batch of [1, 5]) {
      const x = randn([batch, 3, 16, 16], { generator: new Generator(batch) });
      const got = gm.call(x) as Tensor;
      const res = await session.run({
        image: new ort.Tensor('float32', Float32Array.from(x.values() as Float32Array), x.shape),
      });
      const want = res.probs!.data as Float32Array;
      expect(got.shape).toEqual([batch, 5]);
      const g = got.values() as Float32Array;
      for (let i = 0; i < want.length; i++) expect(Math.abs(g[i]! - want[i]!)).toBeLessThan(1e-5);
    }
  });

  it('exports again (functional onnx.* nodes included) and re-imports to the same outputs; onnxruntime agrees', async () => {
    const x = randn([2, 3, 16, 16], { generator: new Generator(9) });
    const bytes = exportOnnxBytes(gm, [x], { inputNames: ['image'], outputNames: ['probs'] });
    const want = gm.call(x) as Tensor;
    expect(Array.from((importOnnx(bytes).call(x) as Tensor).values())).toEqual(Array.from(want.values()));
    const session = await ort.InferenceSession.create(bytes, {
      executionProviders: ['cpu'],
      intraOpNumThreads: 1,
      interOpNumThreads: 1,
    });
    const res = await session.run({
      image: new ort.Tensor('float32', Float32Array.from(x.values() as Float32Array), x.shape),
    });
    const got = res.probs!.data as Float32Array;
    (want.values() as Float32Array).forEach((v, i) => {
      expect(Math.abs(v - got[i]!)).toBeLessThan(1e-4);
    });
  });

  it('serializes to JSON and back like a traced model', () => {
    const x = randn([2, 3, 16, 16], { generator: new Generator(4) });
    const json = JSON.parse(JSON.stringify(serializeGraphModule(gm)));
    const back = deserializeGraphModule(json, { stateDict: gm.stateDict() });
    expect(Array.from((back.call(x) as Tensor).values())).toEqual(Array.from((gm.call(x) as Tensor).values()));
  });
});
