import { FixedAvgPool2d } from '@qtk/fixed-point';
import { AdaptiveAvgPool2d, AvgPool2d, DeQuantStub, Module, QuantStub } from '@qtk/nn';
import type { Tensor } from '@qtk/tensor';
import { describe, expect, test } from 'vitest';
import { exportAndCompare, fixedPointOf, uniformInput } from '../testing/fixed-models.js';

class Pools extends Module {
  readonly quant = new QuantStub();
  readonly pool = new AvgPool2d(3, { stride: 2, padding: 1, ceilMode: true, countIncludePad: false });
  readonly pool2 = new AvgPool2d(2, { stride: 1, padding: 1 });
  readonly adaptive = new AdaptiveAvgPool2d([3, 2]);
  readonly dequant = new DeQuantStub();
  forward(x: Tensor): Tensor {
    return this.dequant.call(this.adaptive.call(this.pool2.call(this.pool.call(this.quant.call(x)))));
  }
}

class Global extends Module {
  readonly quant = new QuantStub();
  readonly pool = new AdaptiveAvgPool2d(1);
  readonly dequant = new DeQuantStub();
  forward(x: Tensor): Tensor {
    return this.dequant.call(this.pool.call(this.quant.call(x)));
  }
}

describe('integer export: FixedAvgPool2d', () => {
  for (const [march, dtype] of [
    ['bayes', 'qint8'],
    ['bayes', 'qint16'],
    ['bernoulli2', 'qint8'],
  ] as const) {
    test(`${march} ${dtype}: padded, ceil-mode, count_include_pad false and adaptive windows (divisors 1 to 9)`, async () => {
      const fixed = fixedPointOf(new Pools(), { march, dtype, calibration: [uniformInput([2, 3, 11, 10], 1, -2, 2)] });
      const kinds = fixed.graph.nodes
        .filter((n) => n.op === 'call_module')
        .map((n) => fixed.getSubmodule(n.target).constructor.name);
      expect(kinds).toEqual(['Quantize', 'FixedAvgPool2d', 'FixedAvgPool2d', 'FixedAvgPool2d', 'Dequantize']);
      const x = uniformInput([2, 3, 11, 10], 2, -3, 3);
      x.values().fill(1e9, 0, 25);
      const { summary } = await exportAndCompare(fixed, x);
      expect(summary).toBe('all 5 compared values identical');
    });

    // bernoulli2 pools windows of at most 7×7
    const size = march === 'bernoulli2' ? 7 : 28;
    test(`${march} ${dtype}: a global average pool over ${size}×${size}`, async () => {
      const fixed = fixedPointOf(new Global(), {
        march,
        dtype,
        calibration: [uniformInput([2, 4, size, size], 1, -1, 1)],
      });
      expect(fixed.getSubmodule('pool')).toBeInstanceOf(FixedAvgPool2d);
      const x = uniformInput([3, 4, size, size], 2, -1.5, 1.5);
      x.values().fill(1e9, 0, size * size);
      x.values().fill(-1e9, size * size, 2 * size * size);
      const { summary } = await exportAndCompare(fixed, x);
      expect(summary).toBe('all 3 compared values identical');
    });
  }
});
