import { FixedMatMul, type Quantize } from '@qtk/fixed-point';
import { DeQuantStub, Module, QuantStub } from '@qtk/nn';
import { matmul, type Tensor } from '@qtk/tensor';
import { describe, expect, test } from 'vitest';
import { exportAndCompare, fixedPointOf, uniformInput } from '../testing/fixed-models.js';

/** Two quantized activations multiplied: [B, M, K] @ [K, N] (batch dims broadcast). */
class TwoInputs extends Module {
  readonly quantA = new QuantStub();
  readonly quantB = new QuantStub();
  readonly dequant = new DeQuantStub();
  forward(a: Tensor, b: Tensor): Tensor {
    return this.dequant.call(matmul(this.quantA.call(a), this.quantB.call(b)));
  }
}

describe('integer export: FixedMatMul', () => {
  // bernoulli2 has no MatMul of two activations
  for (const dtype of ['qint8', 'qint16'] as const) {
    test(`bayes ${dtype}: every node's integers equal QTK's in onnxruntime`, async () => {
      const calib = [[uniformInput([2, 5, 300], 1, -1, 1), uniformInput([300, 7], 2, -1, 1)]];
      const fixed = fixedPointOf(new TwoInputs(), { march: 'bayes', dtype, calibration: calib as never });
      const kinds = fixed.graph.nodes
        .filter((n) => n.op === 'call_module' || n.op === 'call_function')
        .map((n) => (n.op === 'call_module' ? fixed.getSubmodule(n.target).constructor.name : n.target));
      expect(kinds).toEqual(['Quantize', 'Quantize', 'FixedMatMul', 'Dequantize']);
      const a = uniformInput([2, 5, 300], 3, -2, 2);
      const b = uniformInput([300, 7], 4, -2, 2);
      // saturated operands in a whole row and column: the largest sums
      const sa = (fixed.getSubmodule('quantA') as Quantize).scale;
      a.values().fill(1e9, 0, 300);
      b.values().forEach((_, i, v) => {
        if (i % 7 === 0) v[i] = 1e9;
      });
      a.values().set([sa * 2.5, -sa * 2.5, sa * 0.5], 300);
      const { comparison, summary } = await exportAndCompare(fixed, [a, b]);
      expect(comparison.nodes.map((n) => n.op)).toContain('FixedMatMul');
      expect(summary).toBe('all 4 compared values identical');
      const mm = fixed.graph.nodes.find(
        (n) => n.op === 'call_module' && fixed.getSubmodule(n.target) instanceof FixedMatMul,
      );
      expect(mm).toBeDefined();
    });
  }
});
