// PyTorch's opset-13 fixtures rewritten into the opset 18-21 forms by scripts/upgrade-opset.py (python3-onnx):
// ReduceMean's axes as an input (the decomposed LayerNorms), Resize with axes, and from 20 the Erf GELU as one
// Gelu node. Each imports to the same modules as at 13 and matches PyTorch's output and onnxruntime-node's.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { GELU, Hardswish, LayerNorm, rawToTensor, SiLU } from '@qtk/nn';
import { readNpy } from '@qtk/nn/node';
import type { Tensor } from '@qtk/tensor';
import * as ort from 'onnxruntime-node';
import { afterAll, expect, it } from 'vitest';
import { describeNeeding } from '../../../../scripts/needs-system.js';
import { importOnnx } from '../index.js';
import { decodeModel } from '../onnx-schema.js';
import { findPythonWithOnnx } from '../testing/python-onnx.js';
import { relativeError } from '../testing/pattern-models.js';

const here = (f: string) => fileURLToPath(new URL(f, import.meta.url));

describeNeeding('python3-onnx', "PyTorch's fixtures rewritten to opsets 18 to 21", () => {
  const out = mkdtempSync(join(tmpdir(), 'qtk-opset-'));
  afterAll(() => rmSync(out, { recursive: true, force: true }));
  const upgrade = (name: string) => {
    const r = spawnSync(
      findPythonWithOnnx()!,
      [here('../../scripts/upgrade-opset.py'), here(`../../fixtures/${name}.onnx`), out],
      { encoding: 'utf8' },
    );
    expect(r.status, r.stderr).toBe(0);
    return r.stdout;
  };

  const kindsOf = (gm: ReturnType<typeof importOnnx>) =>
    [...gm.graph.nodes]
      .filter((n) => n.op === 'call_module')
      .map((n) => gm.getSubmodule(String(n.target)))
      .filter((m) => [GELU, LayerNorm, SiLU, Hardswish].some((c) => m instanceof c))
      .map((m) => (m instanceof GELU ? `GELU(${m.approximate})` : m.constructor.name));

  it("torch-blocks: the same modules as at opset 13, PyTorch's and onnxruntime's outputs", async () => {
    // 6 ReduceMean axes moved at every opset; from 20 the Erf GELU is one Gelu node (the tanh one stays decomposed)
    expect(upgrade('torch-blocks')).toContain("{'reduce': 6, 'split': 0, 'pad': 0, 'resize': 0, 'gelu': 1}");
    const x = rawToTensor(readNpy(here('../../fixtures/torch-blocks-input.npy')));
    const want = rawToTensor(readNpy(here('../../fixtures/torch-blocks-output.npy'))).values() as Float32Array;
    for (const opset of [18, 19, 20, 21]) {
      const bytes = readFileSync(join(out, `torch-blocks-op${opset}.onnx`));
      const nodes = decodeModel(bytes).graph!.node!;
      expect(nodes.filter((n) => n.op_type === 'Gelu')).toHaveLength(opset >= 20 ? 1 : 0);
      expect(nodes.filter((n) => n.op_type === 'ReduceMean' && n.input!.length === 2)).toHaveLength(6);
      const gm = importOnnx(bytes, { exampleInputs: { image: x } });
      const modules = ['SiLU', 'Hardswish', 'LayerNorm', 'GELU(none)', 'LayerNorm', 'LayerNorm', 'GELU(tanh)'];
      expect(kindsOf(gm).sort(), `opset ${opset}`).toEqual(modules.sort());
      const got = gm.call(x) as Tensor;
      expect(relativeError(got.values() as Float32Array, want)).toBeLessThan(1e-4);
      const session = await ort.InferenceSession.create(bytes, { logSeverityLevel: 3 });
      const res = await session.run({ image: new ort.Tensor('float32', x.values() as Float32Array, [...x.shape]) });
      expect(relativeError(got.values() as Float32Array, res.logits!.data as Float32Array)).toBeLessThan(1e-5);
    }
  });

  it("torch-small: Resize with axes, PyTorch's and onnxruntime's outputs", async () => {
    expect(upgrade('torch-small')).toContain("'resize': 1");
    const x = rawToTensor(readNpy(here('../../fixtures/torch-small-input.npy')));
    const want = rawToTensor(readNpy(here('../../fixtures/torch-small-output.npy'))).values() as Float32Array;
    for (const opset of [18, 21]) {
      const bytes = readFileSync(join(out, `torch-small-op${opset}.onnx`));
      const resize = decodeModel(bytes).graph!.node!.find((n) => n.op_type === 'Resize')!;
      expect(resize.attribute!.find((a) => a.name === 'axes')!.ints!.map(Number)).toEqual([2, 3]);
      const model = decodeModel(bytes).graph!;
      const input = model.input!.find((v) => !(model.initializer ?? []).some((t) => t.name === v.name))!.name!;
      const gm = importOnnx(bytes, { exampleInputs: { [input]: x } });
      const got = gm.call(x) as Tensor;
      expect(relativeError(got.values() as Float32Array, want)).toBeLessThan(1e-4);
      const session = await ort.InferenceSession.create(bytes, { logSeverityLevel: 3 });
      const res = await session.run({ [input]: new ort.Tensor('float32', x.values() as Float32Array, [...x.shape]) });
      const ortOut = res[session.outputNames[0]!]!.data as Float32Array;
      expect(relativeError(got.values() as Float32Array, ortOut)).toBeLessThan(1e-5);
    }
  });
});
