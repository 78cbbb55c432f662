// A BERT-style encoder exported by PyTorch at opset 17 (fixtures/make-transformer-fixture.py): it imports,
// converts on bayes with every op in fixed point (LayerNormalization, Softmax, the attention's MatMuls
// of two activations, the 1/√d scaling, the cloned layers' Identity-shared Linear biases), and its
// integer export is bit-exact in onnxruntime-node (a LayerNorm of int8 input was refused at export by
// a bound that took every input for int16).
import '@qtk/march-bayes';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { calibrate, convertFx, prepareQatFx } from '@qtk/core';
import { defaultQatQconfig } from '@qtk/fake-quant';
import { rawToTensor, sqnrDb } from '@qtk/nn';
import { readNpy } from '@qtk/nn/node';
import { Generator, noGrad, randn, type Tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { formatRuntimeComparison } from './compare-runtime.js';
import { exportOnnxBytes, importOnnx } from '@qtk/onnx';
import { compareWithRuntime } from './node.js';

const fixture = (f: string) => fileURLToPath(new URL(`../fixtures/${f}`, import.meta.url));
const call = (m: unknown, x: Tensor) => noGrad(() => (m as { call(x: Tensor): Tensor }).call(x));

describe('a transformer encoder exported by PyTorch, on bayes', () => {
  const gm = importOnnx(new Uint8Array(readFileSync(fixture('transformer-small.onnx'))));
  const x = rawToTensor(readNpy(fixture('transformer-small-input.npy')));

  it("imports: PyTorch's outputs", () => {
    const want = rawToTensor(readNpy(fixture('transformer-small-output.npy'))).values();
    const got = call(gm, x).values();
    for (let i = 0; i < want.length; i++) expect(Math.abs(got[i]! - want[i]!)).toBeLessThan(1e-5);
  });

  it('converts with every op in fixed point and exports bit-exact', async () => {
    const generator = new Generator(21);
    const batches = Array.from({ length: 8 }, () => randn([1, 8, 16], { generator }));
    const qat = prepareQatFx(
      gm,
      { global: defaultQatQconfig },
      { march: 'bayes', inputQuantStubs: true, onWarning: () => {} },
    );
    calibrate(qat, batches);
    const fixed = convertFx(qat, { onWarning: () => {} });
    const kinds = new Map<string, number>();
    for (const n of fixed.graph.nodes) {
      if (n.op !== 'call_module') continue;
      const kind = fixed.getSubmodule(n.target).constructor.name;
      kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
    }
    expect([...kinds.keys()].filter((k) => !/^Fixed|^Quantize$|^Dequantize$/.test(k))).toEqual([]);
    expect(kinds.get('FixedLayerNorm')).toBe(4);
    expect(kinds.get('FixedSoftmax')).toBe(2);
    expect(kinds.get('FixedMatMul')).toBe(4);
    expect(kinds.get('Quantize')).toBe(1); // the input alone: biases fold into Linears, √d is a number
    const test = randn([1, 8, 16], { generator });
    // measured 28.74 dB against the float import on an unseen input
    expect(sqnrDb(call(gm, test).values(), call(fixed, test).values())).toBeGreaterThan(28);
    const comparison = await compareWithRuntime(fixed, exportOnnxBytes(fixed, [test]), [test]);
    expect(formatRuntimeComparison(comparison)).toMatch(/^all \d+ compared values identical$/);
  });
});
