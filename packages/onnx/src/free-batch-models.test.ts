// PyTorch exports whose shape arithmetic is computed from the free batch dim (zoo/slice/make_slice.py):
// imported at batch 1, they must run at any batch and agree with onnxruntime-node.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Generator, type Tensor, rand } from '@qtk/tensor';
import * as ort from 'onnxruntime-node';
import { describe, expect, it } from 'vitest';
import { importOnnx } from './index.js';

const slice = (f: string) => fileURLToPath(new URL(`../../../zoo/slice/${f}`, import.meta.url));

/** max |got - want| ≤ 1e-4 · max |want| */
function expectClose(got: Float32Array, want: Float32Array): void {
  const maxRef = Math.max(...Array.from(want, Math.abs));
  const maxAbs = Math.max(...Array.from(want, (w, i) => Math.abs(got[i]! - w)));
  expect(maxAbs).toBeLessThanOrEqual(1e-4 * maxRef);
}

describe.each([
  // class_token.expand(n, -1, -1): Shape → Gather → Equal(shape, -1) / Where → Expand
  ['vit-op13.onnx', [3, 8, 8]],
  // nn.TransformerEncoder (batch first): the reshape target bsz * num_heads is a Mul of the batch
  ['bert-op17.onnx', [6, 16]],
])('%s imported at batch 1', (file, sampleShape) => {
  it('runs at batches 1, 2 and 4 as onnxruntime does, with no warning', async () => {
    const bytes = readFileSync(slice(file));
    const warnings: string[] = [];
    const gm = importOnnx(bytes, { onWarning: (m) => warnings.push(m) });
    expect(warnings).toEqual([]);
    const session = await ort.InferenceSession.create(bytes, {
      executionProviders: ['cpu'],
      intraOpNumThreads: 1,
      interOpNumThreads: 1,
    });
    for (const batch of [1, 2, 4]) {
      const x = rand([batch, ...sampleShape], { low: -1, high: 1, generator: new Generator(batch) });
      const got = gm.call(x) as Tensor;
      const res = await session.run({ input: new ort.Tensor('float32', x.values() as Float32Array, x.shape) });
      const ref = res.output!;
      expect(got.shape).toEqual(ref.dims);
      expectClose(got.values() as Float32Array, ref.data as Float32Array);
    }
  });
});
