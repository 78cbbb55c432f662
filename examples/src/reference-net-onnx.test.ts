import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { findMatches, RuleTable, symbolicTrace } from '@qtk/ir';
import { BatchNorm2d, Conv2d, Linear, ReLU } from '@qtk/nn';
import { Generator, type Tensor, randn } from '@qtk/tensor';
import * as ort from 'onnxruntime-node';
import { exportOnnxBytes } from '@qtk/onnx';
import { importOnnx } from '@qtk/onnx/node';
import { exportOnnx } from '@qtk/onnx/node';
import { onnxCheck } from '@qtk/onnx/testing';
import { itWithOnnxChecker } from '../../scripts/onnx-checker.js';
import { ReferenceNet } from './reference-net.js';

const dir = mkdtempSync(join(tmpdir(), 'qtk-onnx-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function trainedReferenceNet(): ReferenceNet {
  const model = new ReferenceNet({ generator: new Generator(7) });
  // One training-mode pass gives the BatchNorms non-trivial running statistics.
  model.train();
  model.call(randn([8, 1, 28, 28], { generator: new Generator(1) }));
  model.eval();
  return model;
}

describe('export then import', () => {
  const model = trainedReferenceNet();
  const gm = symbolicTrace(model);
  const x = randn([3, 1, 28, 28], { generator: new Generator(2) });
  const path = join(dir, 'reference-net.onnx');
  exportOnnx(gm, [x], path);

  it('the imported ReferenceNet gives the traced model’s outputs exactly, at other batch sizes too', () => {
    const back = importOnnx(path);
    for (const batch of [3, 1, 5]) {
      const xb = randn([batch, 1, 28, 28], { generator: new Generator(10 + batch) });
      const want = gm.call(xb) as Tensor;
      const got = back.call(xb) as Tensor;
      expect(got.shape).toEqual([batch, 10]);
      expect(Array.from(got.values())).toEqual(Array.from(want.values()));
    }
  });

  it('maps ONNX nodes back to nn modules named after them', () => {
    const back = importOnnx(path);
    const mods = new Map(back.namedChildren());
    const kinds = [...mods.values()].map((m) => m.constructor.name);
    expect(kinds.filter((k) => k === 'Conv2d')).toHaveLength(9);
    expect(kinds.filter((k) => k === 'BatchNorm2d')).toHaveLength(9);
    expect(kinds).toContain('Linear');
    expect(mods.get('layer1_conv1')).toBeInstanceOf(Conv2d);
    expect(mods.get('layer1_bn1')).toBeInstanceOf(BatchNorm2d);
    expect(mods.get('fc')).toBeInstanceOf(Linear);
    expect(mods.get('layer1_relu1')).toBeInstanceOf(ReLU);
    // state dict keys follow the node names
    expect(Object.keys((back.stateDict() as { tensors: object }).tensors)).toContain('layer1_conv1.weight');
  });

  itWithOnnxChecker('the exported file passes onnx.checker (python3-onnx)', (python) => {
    expect(onnxCheck(python, path)).toBeNull();
  });

  it('onnxruntime-node (CPU) runs the exported file within 1e-4 of QTK', async () => {
    const session = await ort.InferenceSession.create(readFileSync(path), {
      executionProviders: ['cpu'],
      intraOpNumThreads: 1,
      interOpNumThreads: 1,
    });
    expect(session.inputNames).toEqual(['x']);
    expect(session.outputNames).toEqual(['output']);
    for (const batch of [3, 2]) {
      const xb = randn([batch, 1, 28, 28], { generator: new Generator(20 + batch) });
      const want = gm.call(xb) as Tensor;
      const res = await session.run({
        x: new ort.Tensor('float32', Float32Array.from(xb.values() as Float32Array), xb.shape),
      });
      const got = res.output!.data as Float32Array;
      expect(res.output!.dims).toEqual([batch, 10]);
      const maxDiff = Math.max(...Array.from(want.values() as Float32Array, (v, i) => Math.abs(v - got[i]!)));
      expect(maxDiff).toBeLessThan(1e-4);
    }
  });

  it('writes atomically: no temporary file is left behind', async () => {
    const { readdirSync } = await import('node:fs');
    expect(readdirSync(dir).filter((f) => f.endsWith('.tmp'))).toEqual([]);
  });
});

describe('onnx.checker on exports at other opsets', () => {
  for (const opset of [11, 17]) {
    itWithOnnxChecker(`opset ${opset}`, (python) => {
      const gm = symbolicTrace(trainedReferenceNet());
      const path = join(dir, `reference-net-${opset}.onnx`);
      exportOnnx(gm, [randn([2, 1, 28, 28])], path, { opset });
      expect(onnxCheck(python, path)).toBeNull();
    });
  }
});

describe('imported graphs work with the rule engine like traced ones', () => {
  it('a conv-bn-relu pattern matches the same places in the traced and the imported ReferenceNet', () => {
    const gm = symbolicTrace(new ReferenceNet({ generator: new Generator(3) }).eval());
    const back = importOnnx(exportOnnxBytes(gm, [randn([2, 1, 28, 28])]));
    const table = new RuleTable('t', [
      { name: 'conv_bn_relu', pattern: [ReLU, [BatchNorm2d, Conv2d]], apply: () => undefined },
    ]);
    const roots = (m: typeof gm) =>
      findMatches(m, table)
        .map((x) => x.match.root.name)
        .sort();
    expect(roots(back)).toEqual(roots(gm));
    expect(roots(back).length).toBe(4);
  });
});
