import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { GELU, Hardswish, LayerNorm, SiLU } from '@qtk/nn';
import { rawToTensor } from '@qtk/nn';
import { readNpy } from '@qtk/nn/node';
import type { Tensor } from '@qtk/tensor';
import * as ort from 'onnxruntime-node';
import { describe, expect, it } from 'vitest';
import { importOnnx } from './node.js';
import { opsOf, relativeError } from './testing/pattern-models.js';

// Made by fixtures/make-torch-blocks-fixture.py (python3-torch 1.13, opset 13): SiLU, Hardswish, a class
// token through Expand / Equal / Where, an nn.TransformerEncoderLayer with GELU, LayerNorm, a tanh GELU.
const fixture = (f: string) => fileURLToPath(new URL(`../fixtures/${f}`, import.meta.url));

describe("PyTorch's decomposed blocks, exported at opset 13", () => {
  const path = fixture('torch-blocks.onnx');
  const x = rawToTensor(readNpy(fixture('torch-blocks-input.npy')));
  const gm = importOnnx(path, { exampleInputs: { image: x } });

  it('import as GELU, LayerNorm, SiLU and Hardswish modules, with no Erf, Pow or Sqrt left', () => {
    const kinds = [...gm.graph.nodes]
      .filter((n) => n.op === 'call_module')
      .map((n) => gm.getSubmodule(String(n.target)))
      .filter((m) => [GELU, LayerNorm, SiLU, Hardswish].some((c) => m instanceof c))
      .map((m) => (m instanceof GELU ? `GELU(${m.approximate})` : m.constructor.name));
    expect(kinds).toEqual(['SiLU', 'Hardswish', 'LayerNorm', 'GELU(none)', 'LayerNorm', 'LayerNorm', 'GELU(tanh)']);
    const ops = opsOf(gm);
    for (const op of ['Erf', 'Pow', 'Sqrt', 'Sigmoid', 'HardSigmoid', 'Where', 'Equal']) expect(ops).not.toContain(op);
    // the class token's Expand stays: it reads the batch at run time (free-batch-models.test.ts)
    expect(ops.filter((op) => op === 'Expand')).toHaveLength(1);
  });

  it("match PyTorch's outputs and onnxruntime-node's within 1e-4 relative", async () => {
    const got = gm.call(x) as Tensor;
    const want = rawToTensor(readNpy(fixture('torch-blocks-output.npy')));
    expect(got.shape).toEqual([2, 5]);
    expect(relativeError(got.values() as Float32Array, want.values() as Float32Array)).toBeLessThan(1e-4);
    const session = await ort.InferenceSession.create(readFileSync(path), { logSeverityLevel: 3 });
    const res = await session.run({ image: new ort.Tensor('float32', x.values() as Float32Array, [...x.shape]) });
    expect(relativeError(got.values() as Float32Array, res.logits!.data as Float32Array)).toBeLessThan(1e-4);
  });
});
