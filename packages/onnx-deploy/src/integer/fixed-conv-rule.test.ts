import { FixedConv, type Quantize } from '@qtk/fixed-point';
import type { GraphModule } from '@qtk/ir';
import {
  BatchNorm2d,
  Conv2d,
  Conv3d,
  ConvTranspose2d,
  DeQuantStub,
  Linear,
  Module,
  QuantStub,
  ReLU,
  ReLU6,
} from '@qtk/nn';
import { Generator, type Tensor } from '@qtk/tensor';
import { describe, expect, test } from 'vitest';
import { exportAndCompare, fixedPointOf, uniformInput } from '../testing/fixed-models.js';
import { planSum, type SumLayer } from './exact-conv-sum.js';
import type { ObserverDType } from '@qtk/spec';

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

function sumLayerOf(conv: FixedConv, dtype: ObserverDType): SumLayer {
  return {
    kind: conv.config.kind,
    weight: conv.config.weight.values() as Int8Array,
    weightShape: conv.config.weight.shape,
    groups: conv.config.attrs.groups ?? 1,
    attrs: {},
    inputDtype: dtype === 'qint8' ? 'int8' : 'int16',
    inputRank: 4,
  };
}

async function expectIdentical(fixed: GraphModule, x: Tensor | Tensor[], kinds: string[]): Promise<void> {
  expect(kindsOf(fixed)).toEqual(kinds);
  const { comparison, summary } = await exportAndCompare(fixed, x);
  expect(comparison.nodes.length).toBe(kinds.length);
  expect(summary).toBe(`all ${kinds.length} compared values identical`);
}

describe('integer export: FixedConv', () => {
  for (const { march, dtype } of MARCHES) {
    for (const highPrecision of [false, true]) {
      test(`${march} ${dtype}${highPrecision ? ', int32 output' : ''}: more input channels than one exact float32 chunk holds, bias, BN, ReLU6`, async () => {
        const g = new Generator(3);
        const model = new ConvModel(new Conv2d(256, 8, 3, { padding: 1, generator: g }), 8, new ReLU6());
        const fixed = fixedPointOf(model, {
          march,
          dtype,
          calibration: [uniformInput([4, 256, 5, 5], 1, -2, 2)],
          outModules: highPrecision ? ['conv'] : [],
        });
        const conv = fixedConvs(fixed)[0]!;
        const plan = planSum(sumLayerOf(conv, dtype));
        expect(plan.chunks.length).toBeGreaterThan(1);
        expect(plan.split).toBe(dtype === 'qint16');
        expect(conv.config.bias).not.toBeNull();
        expect(conv.config.activation).toBe('relu6');
        expect(conv.config.requant === null).toBe(highPrecision);
        const x = withEdgeValues(fixed, uniformInput([3, 256, 5, 5], 2, -4, 4));
        await expectIdentical(fixed, x, ['Quantize', 'FixedConv', 'Dequantize']);
      });
    }

    test(`${march} ${dtype}: depthwise and grouped convs (stride, dilation, padding; groups of more than one chunk)`, async () => {
      const g = new Generator(4);
      class Grouped extends Module {
        readonly quant = new QuantStub();
        readonly dw = new Conv2d(512, 512, 3, { stride: 2, padding: 2, dilation: 2, groups: 512, generator: g });
        readonly relu = new ReLU();
        readonly grouped = new Conv2d(512, 8, [3, 3], { padding: [1, 0], groups: 2, bias: false, generator: g });
        readonly dequant = new DeQuantStub();
        forward(x: Tensor): Tensor {
          return this.dequant.call(this.grouped.call(this.relu.call(this.dw.call(this.quant.call(x)))));
        }
      }
      const fixed = fixedPointOf(new Grouped(), {
        march,
        dtype,
        calibration: [uniformInput([2, 512, 7, 7], 1, -2, 2)],
        outModules: ['grouped'],
      });
      const [dw, grouped] = fixedConvs(fixed);
      expect(dw!.config.attrs.groups).toBe(512);
      expect(dw!.config.activation).toBe('relu');
      expect(planSum(sumLayerOf(grouped!, dtype)).chunks.length).toBeGreaterThan(1);
      const x = withEdgeValues(fixed, uniformInput([2, 512, 7, 7], 2, -3, 3));
      await expectIdentical(fixed, x, ['Quantize', 'FixedConv', 'FixedConv', 'Dequantize']);
    });

    test(`${march} ${dtype}: padding 'same' with an even, dilated kernel (asymmetric pads)`, async () => {
      const g = new Generator(12);
      const conv = new Conv2d(3, 4, [2, 4], { padding: 'same', dilation: [1, 2], generator: g });
      const fixed = fixedPointOf(new ConvModel(conv, null, new ReLU()), {
        march,
        dtype,
        calibration: [uniformInput([2, 3, 6, 9], 1, -2, 2)],
        outModules: ['conv'],
      });
      expect(fixedConvs(fixed)[0]!.config.attrs.padding).toBe('same');
      const x = withEdgeValues(fixed, uniformInput([2, 3, 6, 9], 2, -3, 3));
      await expectIdentical(fixed, x, ['Quantize', 'FixedConv', 'Dequantize']);
    });

    for (const highPrecision of [false, true]) {
      test(`${march} ${dtype}${highPrecision ? ', int32 output' : ''}: a ResNet-style block, the add fused into the conv (sumin as shrR(e·m, n))`, async () => {
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
        const fixed = fixedPointOf(new Block(), {
          march,
          dtype,
          calibration: [uniformInput([4, 4, 6, 6], 1, -2, 2)],
          outModules: highPrecision ? ['conv2'] : [],
        });
        const convs = fixedConvs(fixed);
        const sumin = convs[1]!.config.sumin!;
        expect(Array.from(sumin.k).every((k) => k < 0)).toBe(true);
        expect(Array.from(sumin.n).every((n) => n > 0)).toBe(true);
        expect(convs[1]!.config.requant === null).toBe(highPrecision);
        const x = withEdgeValues(fixed, uniformInput([2, 4, 6, 6], 2, -3, 3));
        await expectIdentical(fixed, x, ['Quantize', 'FixedConv', 'FixedConv', 'Dequantize']);
      });
    }

    test(`${march} ${dtype}: linear layers, one requantized with ReLU, one kept as int32 (more inputs than one chunk, a 3-d input)`, async () => {
      const g = new Generator(7);
      class Head extends Module {
        readonly quant = new QuantStub();
        readonly fc1 = new Linear(3000, 24, { generator: g });
        readonly relu = new ReLU();
        readonly fc = new Linear(24, 10, { generator: g });
        readonly dequant = new DeQuantStub();
        forward(x: Tensor): Tensor {
          return this.dequant.call(this.fc.call(this.relu.call(this.fc1.call(this.quant.call(x)))));
        }
      }
      const fixed = fixedPointOf(new Head(), {
        march,
        dtype,
        calibration: [uniformInput([2, 3, 3000], 1, -2, 2)],
        outModules: ['fc'],
      });
      const [fc1, fc] = fixedConvs(fixed);
      expect(fc1!.config.kind).toBe('linear');
      expect(planSum(sumLayerOf(fc1!, dtype)).chunks.length).toBeGreaterThan(1);
      expect(fc!.config.requant).toBeNull();
      const x = withEdgeValues(fixed, uniformInput([2, 3, 3000], 2, -3, 3));
      await expectIdentical(fixed, x, ['Quantize', 'FixedConv', 'FixedConv', 'Dequantize']);
    });

    test(`${march} ${dtype}: transposed convs (stride, padding, output padding, groups, dilation)`, async () => {
      const g = new Generator(8);
      class Up extends Module {
        readonly quant = new QuantStub();
        readonly up = new ConvTranspose2d(8, 8, 3, {
          stride: 2,
          padding: 1,
          outputPadding: 1,
          groups: 2,
          generator: g,
        });
        readonly relu = new ReLU();
        readonly up2 = new ConvTranspose2d(8, 4, 2, { dilation: 2, bias: false, generator: g });
        readonly dequant = new DeQuantStub();
        forward(x: Tensor): Tensor {
          return this.dequant.call(this.up2.call(this.relu.call(this.up.call(this.quant.call(x)))));
        }
      }
      const fixed = fixedPointOf(new Up(), {
        march,
        dtype,
        calibration: [uniformInput([2, 8, 5, 5], 1, -2, 2)],
        outModules: ['up2'],
      });
      const [up, up2] = fixedConvs(fixed);
      expect(up!.config.kind).toBe('conv_transpose');
      expect(up2!.config.requant).toBeNull();
      const x = withEdgeValues(fixed, uniformInput([2, 8, 5, 5], 2, -3, 3));
      await expectIdentical(fixed, x, ['Quantize', 'FixedConv', 'FixedConv', 'Dequantize']);
    });
  }

  for (const highPrecision of [false, true])
    test(`bayes qint16${highPrecision ? ', int32 output' : ''}: the sumin term e·mult·2^k (added input scale ≥ 32767 accumulator steps)`, async () => {
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
      const fixed = fixedPointOf(new SmallWeights(), {
        march: 'bayes',
        dtype: 'qint16',
        calibration: calib as never,
        outModules: highPrecision ? ['conv'] : [],
      });
      const conv = fixedConvs(fixed)[0]!;
      expect(Array.from(conv.config.sumin!.k).some((k) => k >= 0)).toBe(true);
      const x = withEdgeValues(fixed, uniformInput([2, 3, 6, 6], 3, -2, 2));
      const e = withEdgeValues(fixed, uniformInput([2, 4, 6, 6], 4, -150, 150), 'quantE');
      e.values().set([0.01, -0.01, 0.02], 8);
      await expectIdentical(fixed, [x, e], ['Quantize', 'Quantize', 'FixedConv', 'Dequantize']);
    });

  test('bayes qint8 and qint16: a 3-d conv; int16 with a kernel whose one channel exceeds 2^24 (planned per tap)', async () => {
    for (const dtype of ['qint8', 'qint16'] as const) {
      const g = new Generator(9);
      const model = new ConvModel(new Conv3d(1, 2, 11, { padding: 1, generator: g }), null, new ReLU());
      const fixed = fixedPointOf(model, {
        march: 'bayes',
        dtype,
        calibration: [uniformInput([1, 1, 12, 12, 12], 1, -2, 2)],
        outModules: ['conv'],
      });
      const conv = fixedConvs(fixed)[0]!;
      const plan = planSum(sumLayerOf(conv, dtype));
      // per-tap chunks read overlapping channels; here the one input channel
      if (dtype === 'qint16') expect(plan.chunks.length).toBeGreaterThan(1);
      expect(plan.chunks.every((c) => c.c0 === 0 && c.c1 === 1)).toBe(true);
      const x = withEdgeValues(fixed, uniformInput([2, 1, 12, 12, 12], 2, -3, 3));
      await expectIdentical(fixed, x, ['Quantize', 'FixedConv', 'Dequantize']);
    }
  });
});

describe('planSum', () => {
  test('keeps every chunk of every output within 2^24 for the worst input, per channel and per tap', () => {
    const g = new Generator(10);
    for (const [cin, kvol, dtype] of [
      [300, 9, 'int8'],
      [300, 9, 'int16'],
      [2, 1500, 'int16'],
    ] as const) {
      const cout = 3;
      const weight = Int8Array.from({ length: cout * cin * kvol }, () => Math.floor(g.uniform() * 255) - 127);
      const layer = {
        kind: 'conv' as const,
        weight,
        weightShape: [cout, cin, kvol],
        groups: 1,
        attrs: {},
        inputDtype: dtype,
        inputRank: 3,
      };
      const plan = planSum(layer);
      const parts = plan.split ? [128, 255] : [dtype === 'int8' ? 128 : 32768];
      let covered = 0;
      for (const ch of plan.chunks) {
        expect(ch.u0).toBe(covered);
        covered = ch.u1;
        for (let o = 0; o < cout; o++)
          for (const p of parts) {
            let s = 0;
            for (let u = ch.u0; u < ch.u1; u++) s += Math.abs(weight[o * cin * kvol + u]!) * p;
            expect(s).toBeLessThanOrEqual(2 ** 24);
          }
      }
      expect(covered).toBe(cin * kvol);
      if (kvol === 1500) expect(plan.chunks.some((c) => c.u0 % kvol !== 0)).toBe(true);
    }
  });
});
