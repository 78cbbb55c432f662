import '../index.js'; // the QDQ and integer export rules
import { symbolicTrace } from '@qtk/ir';
import { AdaptiveAvgPool2d, Hardsigmoid, Hardswish, Module, ReLU } from '@qtk/nn';
import type { Tensor } from '@qtk/tensor';
import { describe, expect, test } from 'vitest';
import { compareWithRuntime } from '../node/compare-with-runtime.js';
import { exportOnnxBytes, decodeModel } from '@qtk/onnx';
import { uniformInput } from '../testing/fixed-models.js';

class FloatTail extends Module {
  readonly hs = new Hardswish();
  readonly hsig = new Hardsigmoid();
  readonly relu = new ReLU();
  readonly global = new AdaptiveAvgPool2d(1);
  readonly windows = new AdaptiveAvgPool2d([2, 3]);
  forward(x: Tensor): Tensor[] {
    const a = this.hs.call(x);
    return [this.global.call(a), this.windows.call(this.hsig.call(this.relu.call(a)))];
  }
}

/** Values whose exponents spread widely (so float64 sums round), the ±3 knees, ties and signed zeros. */
function hardInput(): Tensor {
  const x = uniformInput([3, 4, 8, 9], 5, -6, 6);
  const v = x.values() as Float32Array;
  for (let i = 0; i < v.length; i += 7) v[i] = v[i]! * 2 ** -(i % 40);
  v.set([-3, 3, -0, 0, 2.9999998, -2.9999998, 1e-30, 3.0000002], 0);
  return x;
}

describe('exact float forms', () => {
  test("hardswish, hardsigmoid, relu and adaptive average pooling equal QTK's float32 results bit for bit", async () => {
    const gm = symbolicTrace(new FloatTail());
    const x = hardInput();
    const bytes = exportOnnxBytes(gm, [x], { floatForm: 'exact' });
    const ops = new Set(decodeModel(bytes).graph!.node!.map((n) => n.op_type));
    expect(ops.has('CumSum')).toBe(true);
    expect(ops.has('HardSwish')).toBe(false);
    const c = await compareWithRuntime(gm, bytes, [x]);
    expect(c.nodes.map((n) => n.node)).toEqual(['hs', 'global', 'relu', 'hsig', 'windows']);
    for (const n of c.nodes) expect(`${n.node}: ${n.mismatches}`).toBe(`${n.node}: 0`);
  });

  test('float models keep the standard ops unless asked', () => {
    const gm = symbolicTrace(new FloatTail());
    const ops = decodeModel(exportOnnxBytes(gm, [hardInput()], { opset: 14 })).graph!.node!.map((n) => n.op_type);
    expect(ops).toContain('HardSwish');
    expect(ops).not.toContain('CumSum');
  });
});
