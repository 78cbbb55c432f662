import { FixedConv, type Quantize } from '@qtk/fixed-point';
import type { GraphModule } from '@qtk/ir';
import {
  BatchNorm2d,
  Conv2d,
  Conv3d,
  ConvTranspose2d,
  DeQuantStub,
  Flatten,
  Linear,
  Module,
  QuantStub,
  ReLU,
  ReLU6,
} from '@qtk/nn';
import { Generator, type Tensor } from '@qtk/tensor';
import { describe, expect, test } from 'vitest';
import { exportAndCompare, fixedPointOf, uniformInput } from '../testing/fixed-models.js';
import { planSum } from './exact-conv-sum.js';

const MARCHES = [
  { march: 'bayes', dtype: 'qint8' },
  { march: 'bayes', dtype: 'qint16' },
  { march: 'bernoulli2', dtype: 'qint8' },
] as const;

const kindsOf = (fixed: GraphModule): string[] =>
  fixed.graph.nodes.filter((n) => n.op === 'call_module').map((n) => fixed.getSubmodule(n.target).constructor.name);

const fixedConvs = (fixed: GraphModule): FixedConv[] =>
  fixed.graph.nodes
    .filter((n) => n.op === 'call_module')
    .map((n) => fixed.getSubmodule(n.target))
    .filter((m): m is FixedConv => m instanceof FixedConv);

/** Sets a few inputs to ±2.5 and ±0.5 quantization steps (rounding ties) and far beyond the range (saturation). */
function withEdgeValues(fixed: GraphModule, x: Tensor, quant = 'quant'): Tensor {
  const s = (fixed.getSubmodule(quant) as Quantize).scale;
  x.values().set([s * 2.5, -s * 2.5, s * 0.5, -s * 0.5, 1e9, -1e9], 0);
  return x;
}

/** quant → conv (+ BN) → ReLU / ReLU6 → dequant. */
class ConvModel extends Module {
  readonly quant = new QuantStub();
  readonly conv: Module;
  readonly bn: BatchNorm2d | null;
  readonly act: Module;
  readonly dequant = new DeQuantStub();
  constructor(conv: Module, bnChannels: number | null, act: Module) {
    super();
    this.conv = conv;
    this.bn = bnChannels ? new BatchNorm2d(bnChannels) : null;
    this.act = act;
  }
  forward(x: Tensor): Tensor {
    let y = this.conv.call(this.quant.call(x)) as Tensor;
    if (this.bn) y = this.bn.call(y);
    return this.dequant.call(this.act.call(y));
  }
}

async function expectIdentical(fixed: GraphModule, x: Tensor | Tensor[], kinds: string[]): Promise<void> {
  expect(kindsOf(fixed)).toEqual(kinds);
  const { comparison, summary } = await exportAndCompare(fixed, x);
  expect(comparison.nodes.length).toBe(kinds.length);
  expect(summary).toBe(`all ${kinds.length} compared values identical`);
}

describe('integer export: FixedConv', () => {
  for (const { march, dtype } of MARCHES) {
    test(`${march} ${dtype}: a conv with more input channels than one exact float32 chunk holds, bias, BN, ReLU6`, async () => {
      const g = new Generator(3);
      const model = new ConvModel(new Conv2d(256, 8, 3, { padding: 1, generator: g }), 8, new ReLU6());
      const fixed = fixedPointOf(model, { march, dtype, calibration: [uniformInput([4, 256, 5, 5], 1, -2, 2)] });
      const conv = fixedConvs(fixed)[0]!;
      const plan = planSum({
        kind: 'conv',
        weight: conv.config.weight.values() as Int8Array,
        weightShape: conv.config.weight.shape,
        groups: 1,
        attrs: {},
        inputDtype: dtype === 'qint8' ? 'int8' : 'int16',
        inputRank: 4,
      });
      expect(plan.chunks.length).toBeGreaterThan(1);
      expect(plan.split).toBe(dtype === 'qint16');
      expect(conv.config.bias).not.toBeNull();
      expect(conv.config.activation).toBe('relu6');
      const x = withEdgeValues(fixed, uniformInput([3, 256, 5, 5], 2, -4, 4));
      await expectIdentical(fixed, x, ['Quantize', 'FixedConv', 'Dequantize']);
    });

    test(`${march} ${dtype}: depthwise and grouped convs (stride, dilation, padding)`, async () => {
      const g = new Generator(4);
      class Grouped extends Module {
        readonly quant = new QuantStub();
        readonly dw = new Conv2d(16, 16, 3, { stride: 2, padding: 2, dilation: 2, groups: 16, generator: g });
        readonly relu = new ReLU();
        readonly grouped = new Conv2d(16, 8, [3, 1], { padding: [1, 0], groups: 2, bias: false, generator: g });
        readonly dequant = new DeQuantStub();
        forward(x: Tensor): Tensor {
          return this.dequant.call(this.grouped.call(this.relu.call(this.dw.call(this.quant.call(x)))));
        }
      }
      const fixed = fixedPointOf(new Grouped(), { march, dtype, calibration: [uniformInput([4, 16, 9, 9], 1, -2, 2)] });
      const x = withEdgeValues(fixed, uniformInput([2, 16, 9, 9], 2, -3, 3));
      await expectIdentical(fixed, x, ['Quantize', 'FixedConv', 'FixedConv', 'Dequantize']);
      expect(fixedConvs(fixed)[0]!.config.activation).toBe('relu');
    });

    test(`${march} ${dtype}: a ResNet-style block, the add fused into the conv (sumin)`, async () => {
      const g = new Generator(5);
      class Block extends Module {
        readonly quant = new QuantStub();
        readonly conv1 = new Conv2d(4, 8, 3, { padding: 1, generator: g });
        readonly bn1 = new BatchNorm2d(8);
        readonly relu1 = new ReLU();
        readonly conv2 = new Conv2d(8, 8, 3, { padding: 1, bias: false, generator: g });
        readonly bn2 = new BatchNorm2d(8);
        readonly relu2 = new ReLU();
        readonly dequant = new DeQuantStub();
        forward(x: Tensor): Tensor {
          const a = this.relu1.call(this.bn1.call(this.conv1.call(this.quant.call(x))));
          return this.dequant.call(this.relu2.call(this.bn2.call(this.conv2.call(a)).add(a)));
        }
      }
      const fixed = fixedPointOf(new Block(), { march, dtype, calibration: [uniformInput([4, 4, 6, 6], 1, -2, 2)] });
      const convs = fixedConvs(fixed);
      expect(convs[1]!.config.sumin).not.toBeNull();
      expect(Array.from(convs[1]!.config.sumin!.k).every((k) => k < 0)).toBe(true);
      const x = withEdgeValues(fixed, uniformInput([2, 4, 6, 6], 2, -3, 3));
      await expectIdentical(fixed, x, ['Quantize', 'FixedConv', 'FixedConv', 'Dequantize']);
    });
  }

  test('bayes qint16: the sumin term e·mult·2^k (added input scale ≥ 32767 accumulator steps)', async () => {
    const g = new Generator(6);
    class SmallWeights extends Module {
      readonly quant = new QuantStub();
      readonly quantE = new QuantStub();
      readonly conv = new Conv2d(3, 4, 3, { padding: 1, generator: g });
      readonly relu = new ReLU();
      readonly dequant = new DeQuantStub();
      constructor() {
        super();
        this.conv.weight.values().forEach((v, i, a) => {
          a[i] = v * 1e-3;
        });
      }
      forward(x: Tensor, e: Tensor): Tensor {
        return this.dequant.call(this.relu.call(this.conv.call(this.quant.call(x)).add(this.quantE.call(e))));
      }
    }
    const calib = [[uniformInput([4, 3, 6, 6], 1, -1, 1), uniformInput([4, 4, 6, 6], 2, -100, 100)]];
    const fixed = fixedPointOf(new SmallWeights(), { march: 'bayes', dtype: 'qint16', calibration: calib as never });
    const conv = fixedConvs(fixed)[0]!;
    expect(Array.from(conv.config.sumin!.k).some((k) => k >= 0)).toBe(true);
    const x = withEdgeValues(fixed, uniformInput([2, 3, 6, 6], 3, -2, 2));
    const e = withEdgeValues(fixed, uniformInput([2, 4, 6, 6], 4, -150, 150), 'quantE');
    await expectIdentical(fixed, [x, e], ['Quantize', 'Quantize', 'FixedConv', 'Dequantize']);
  });
});
