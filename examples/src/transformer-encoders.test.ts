// A ViT, a BERT-style encoder and ConvNeXt blocks on bayes: every op (LayerNorm, GELU, Softmax, the attention's
// activation × activation MatMuls) converts to fixed point, the SQNR against float beats PyTorch FX's
// int8 PTQ on the same weights and samples, and the integer ONNX export is bit-exact in onnxruntime.
import { modelFromBytes, modelToBytes } from '@qtk/core';
import { sqnrDb } from '@qtk/nn';
import { exportOnnxBytes } from '@qtk/onnx';
import { formatRuntimeComparison } from '@qtk/onnx-deploy';
import { compareWithRuntime } from '@qtk/onnx-deploy/node';
import { noGrad, type Tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { encoderCases, quantizeCase } from './transformer-sqnr.js';

// scripts/transformer-sqnr/fx_sqnr.py on the same weights and samples (PyTorch 1.13, onednn, its
// default qconfig mapping; min-max observers give 15.90 / 24.60 / 19.59 dB); docs/benchmark.md
const FX_SQNR_DB = { vit: 17.17, bert: 25.79, convnext: 19.84 };
const MEASURED_DB = { vit: 31.04, bert: 32.03, convnext: 34.85 };
/** Fixed-point modules per model: two layers (blocks) of each. */
const EXPECTED_MODULES = {
  // q·kᵀ and attention·v per layer; the class token and position embedding enter through their own quantizes
  vit: { FixedSoftmax: 2, FixedTableOp: 2, FixedMatMul: 4, FixedLayerNorm: 5, Quantize: 3 },
  bert: { FixedSoftmax: 2, FixedTableOp: 2, FixedMatMul: 4, FixedLayerNorm: 4, Quantize: 1 },
  // each block's layer scale enters through its own quantize
  convnext: { FixedSoftmax: 0, FixedTableOp: 2, FixedMatMul: 0, FixedLayerNorm: 2, Quantize: 3 },
};

describe('transformer encoders on bayes', () => {
  for (const c of encoderCases()) {
    it(`${c.name}: every op converts, SQNR above PyTorch FX's, model file round trip, integer ONNX bit-exact`, async () => {
      const r = quantizeCase(c);
      const kinds = new Map<string, number>();
      for (const n of r.fixed.graph.nodes) {
        if (n.op !== 'call_module') continue; // the views (reshape, transpose, split) run as written
        const kind = r.fixed.getSubmodule(n.target).constructor.name;
        kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
      }
      for (const [kind, count] of Object.entries(EXPECTED_MODULES[c.name]))
        expect(kinds.get(kind) ?? 0, kind).toBe(count);
      // nothing left float: every module is a fixed-point one or a boundary
      expect([...kinds.keys()].filter((k) => !/^Fixed|^Quantize$|^Dequantize$/.test(k))).toEqual([]);

      const fixedDb = sqnrDb(r.float.values(), r.fixedOut.values());
      expect(fixedDb).toBeGreaterThan(FX_SQNR_DB[c.name] + 5);
      expect(Math.abs(fixedDb - MEASURED_DB[c.name])).toBeLessThan(0.05);
      // the fixed-point model is as close to float as the fake-quant model it was converted from
      expect(Math.abs(fixedDb - sqnrDb(r.float.values(), r.fakeQuant.values()))).toBeLessThan(1.5);

      // the model file keeps the constants the graph reads (class token, position embedding, layer scale)
      const loaded = modelFromBytes(modelToBytes(r.fixed)).model as unknown as { call(x: Tensor): Tensor };
      expect(Array.from(noGrad(() => loaded.call(c.test)).values())).toEqual(Array.from(r.fixedOut.values()));

      const comparison = await compareWithRuntime(r.fixed, exportOnnxBytes(r.fixed, [c.test]), [c.test]);
      expect(formatRuntimeComparison(comparison)).toMatch(/^all \d+ compared values identical$/);
    });
  }
});
