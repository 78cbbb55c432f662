import { Dequantize, type Quantize } from '@qtk/fixed-point';
import { describe, expect, test } from 'vitest';
import { fixedPointOf, exportAndCompare, uniformInput } from '../testing/fixed-models.js';
import { PoolReluNet } from '../testing/pool-relu-net.js';
import { decodeModel } from '@qtk/onnx';

describe('integer export: quantize, value ops, dequantize', () => {
  for (const march of ['bayes', 'bernoulli2'])
    for (const dtype of ['qint8', 'qint16'] as const) {
      if (march === 'bernoulli2' && dtype === 'qint16') continue; // bernoulli2 has no int16 activations
      test(`${march} ${dtype}: every node's integers equal QTK's in onnxruntime`, async () => {
        const calib = [uniformInput([8, 3, 8, 8], 1, -3, 3)];
        const fixed = fixedPointOf(new PoolReluNet(), { march, dtype, calibration: calib });
        const kinds = fixed.graph.nodes
          .filter((n) => n.op === 'call_module')
          .map((n) => fixed.getSubmodule(n.target).constructor.name);
        expect(kinds).toEqual(['Quantize', 'FixedValueOp', 'FixedValueOp', 'FixedValueOp', 'Dequantize']);
        // Values beyond the calibrated range saturate; halves of the scale test the rounding.
        const x = uniformInput([4, 3, 8, 8], 2, -5, 5);
        const q = fixed.getSubmodule('quant') as Quantize;
        x.values().set([q.scale * 2.5, -q.scale * 2.5, q.scale * 0.5, -q.scale * 0.5, 1e9, -1e9], 0);
        const { comparison, summary } = await exportAndCompare(fixed, x);
        expect(comparison.nodes.length).toBe(5);
        expect(summary).toBe('all 5 compared values identical');
        expect(fixed.getSubmodule('dequant')).toBeInstanceOf(Dequantize);
        // int8 dequantizes with the standard op; int16 only from opset 21, where the op takes int16.
        const ops = (bytes: Uint8Array) => decodeModel(bytes).graph!.node!.map((n) => n.op_type);
        const { bytes } = await exportAndCompare(fixed, x);
        expect(ops(bytes).includes('DequantizeLinear')).toBe(dtype === 'qint8');
        // Opset 11 has no float64 Clip in onnxruntime: saturation is written as Max and Min there.
        const at11 = await exportAndCompare(fixed, x, { opset: 11 });
        expect(at11.summary).toBe('all 5 compared values identical');
        expect(ops(at11.bytes)).not.toContain('Clip');
        const at21 = await exportAndCompare(fixed, x, { opset: 21 });
        expect(at21.summary).toBe('all 5 compared values identical');
        expect(ops(at21.bytes)).toContain('DequantizeLinear');
      });
    }
});
