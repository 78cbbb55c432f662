import { Conv2d, Linear, Tanh } from '@qtk/nn';
import { Generator, rand, tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import {
  call,
  ConvBnReluNet,
  ConvSkipNet,
  CpuEndsNet,
  imageBatches,
  MiddleOpsNet,
  NestedSeluNet,
  randomInputs,
  ResidualNet,
  ResidualSigmoidNet,
  ShortcutResNet,
  SingleOpNet,
  TinyResNet,
} from './index.js';

const values = (t: { values(): ArrayLike<number> }) => Array.from(t.values());

describe('@qtk/test-models', () => {
  it("draws a network's layers from its seed in the order they are built", () => {
    const net = new CpuEndsNet(29);
    const g = new Generator(29);
    const conv0 = new Conv2d(3, 4, 3, { padding: 1, generator: g });
    const conv1 = new Conv2d(4, 4, 1, { generator: g });
    expect(values(net.conv0.weight)).toEqual(values(conv0.weight));
    expect(values(net.conv1.bias!)).toEqual(values(conv1.bias!));
    // the hybrid tests' seed gives other weights
    expect(values(new CpuEndsNet(5).conv0.weight)).not.toEqual(values(conv0.weight));
  });

  it('builds TinyResNet conv0, conv1, conv2, then fc from one generator', () => {
    const net = new TinyResNet(7);
    const g = new Generator(7);
    new Conv2d(3, 8, 3, { padding: 1, generator: g });
    new Conv2d(8, 8, 3, { padding: 1, generator: g });
    new Conv2d(8, 16, 1, { generator: g });
    const fc = new Linear(16, 4, { generator: g });
    expect(values(net.fc.weight)).toEqual(values(fc.weight));
    expect(Object.keys(net.stateDict().tensors).filter((k) => k.endsWith('.weight'))).toEqual([
      'conv0.weight',
      'bn0.weight',
      'conv1.weight',
      'bn1.weight',
      'conv2.weight',
      'fc.weight',
    ]);
  });

  it('gives seeded inputs in [-1, 1]', () => {
    const x = randomInputs(3, 2);
    expect(x.shape).toEqual([2, 3, 8, 8]);
    expect(values(x)).toEqual(
      values(
        rand([2, 3, 8, 8], { generator: new Generator(3) })
          .mul(2)
          .sub(1),
      ),
    );
    expect(Math.max(...values(x).map(Math.abs))).toBeLessThanOrEqual(1);
    const batches = imageBatches(4, 2, 3);
    expect(batches.map((b) => b.shape)).toEqual([
      [3, 3, 6, 6],
      [3, 3, 6, 6],
    ]);
    // one generator for all batches: the second batch continues the first's stream
    expect(values(batches[1]!)).not.toEqual(values(batches[0]!));
  });

  it('runs each network on the inputs it is made for', () => {
    expect(call(new TinyResNet().eval(), randomInputs(1, 2)).shape).toEqual([2, 4]);
    expect(call(new MiddleOpsNet().eval(), randomInputs(1, 2)).shape).toEqual([2, 10]);
    expect(call(new MiddleOpsNet(3, 1).eval(), randomInputs(1, 2)).shape).toEqual([2, 10]);
    expect(call(new CpuEndsNet().eval(), randomInputs(1, 2)).shape).toEqual([2, 4, 8, 8]);
    expect(call(new NestedSeluNet().eval(), rand([2, 3, 4, 4])).shape).toEqual([2, 3]);
    expect(call(new ResidualSigmoidNet().eval(), imageBatches(1, 1)[0]!).shape).toEqual([4, 4]);
    expect(call(new ResidualNet().eval(), rand([1, 1, 28, 28])).shape).toEqual([1, 10]);
  });

  it("gives ResidualNet's batch norms statistics from seed·100 + i, so folding them changes the weights", () => {
    const net = new ResidualNet(1);
    const g = new Generator(100);
    const c = net.stem.bn.runningMean!.size;
    const mean = Array.from({ length: c }, () => {
      const m = Math.fround(0.2 * g.uniform() - 0.1);
      g.uniform();
      return m;
    });
    expect(values(net.stem.bn.runningMean!)).toEqual(mean);
  });

  it('builds ConvBnReluNet block by block, its convs then fc from one generator', () => {
    const options = { inChannels: 2, channels: 4, classes: 3, convBias: [false, true, false] as const };
    const net = new ConvBnReluNet({ ...options, generator: new Generator(3), residual: true, inputScale: 0.5 });
    const g = new Generator(3);
    const convs = [
      new Conv2d(2, 4, 3, { padding: 1, bias: false, generator: g }),
      new Conv2d(4, 4, 3, { padding: 1, generator: g }),
      new Conv2d(4, 4, 3, { padding: 1, bias: false, generator: g }),
    ];
    const fc = new Linear(4, 3, { generator: g });
    expect(values(net.conv3!.weight)).toEqual(values(convs[2]!.weight));
    expect(values(net.conv2.bias!)).toEqual(values(convs[1]!.bias!));
    expect(net.conv1.bias).toBeNull();
    expect(values(net.fc.weight)).toEqual(values(fc.weight));
    expect(net.quant.scale).toBe(0.5);
    expect(net.namedChildren().map(([n]) => n)).toEqual(
      'quant conv1 bn1 relu1 conv2 bn2 relu2 conv3 bn3 relu3 pool flatten fc dequant'.split(' '),
    );
    const two = new ConvBnReluNet({ ...options, convBias: [true, true], generator: new Generator(3), residual: false });
    expect(two.namedChildren().map(([n]) => n)).toEqual(
      'quant conv1 bn1 relu1 conv2 bn2 relu2 pool flatten fc dequant'.split(' '),
    );
    expect(two.quant.scale).toBeNull();
    const pooled = new ConvBnReluNet({ ...options, generator: new Generator(3), residual: true, downsample: true });
    expect(pooled.namedChildren().map(([n]) => n)).toEqual(
      'quant conv1 bn1 relu1 conv2 bn2 relu2 conv3 bn3 relu3 maxpool avgpool pool flatten fc dequant'.split(' '),
    );
    // 9×9 → max 2×2 stride 1 → 8×8 → average 2×2 stride 2 → 4×4
    expect(pooled.avgpool!.call(pooled.maxpool!.call(rand([1, 4, 9, 9]))).shape).toEqual([1, 4, 4, 4]);
  });

  it("adds ConvBnReluNet's first block output before the last ReLU only when residual", () => {
    const x = rand([1, 2, 4, 4], { generator: new Generator(1) });
    const net = (residual: boolean) =>
      new ConvBnReluNet({
        generator: new Generator(3),
        inChannels: 2,
        channels: 4,
        classes: 3,
        convBias: [true, true],
        residual,
      }).eval();
    const plain = values(call(net(false), x));
    const withSkip = values(call(net(true), x));
    expect(withSkip).toHaveLength(3);
    expect(withSkip).not.toEqual(plain);
    // relu(z + a) ≥ relu(z) element-wise for a ≥ 0, and the head is linear: the pooled features grow
    const pooled = (residual: boolean) => {
      const m = net(residual);
      const a = m.relu1.call(m.bn1.call(m.conv1.call(x)));
      const z = m.bn2.call(m.conv2.call(a));
      return values(m.pool.call(m.relu2.call(residual ? z.add(a) : z)));
    };
    const [grown, base] = [pooled(true), pooled(false)];
    for (let i = 0; i < grown.length; i++) expect(grown[i]).toBeGreaterThanOrEqual(base[i]!);
    expect(grown).not.toEqual(base);
  });

  it('builds ShortcutResNet with 1x1 shortcuts only where a block changes the shape', () => {
    const net = new ShortcutResNet(2);
    expect(net.layer1.short).toBeNull();
    expect(net.layer2.short).not.toBeNull();
    expect(net.layer3.conv2.weight.shape).toEqual([32, 32, 3, 3]);
    expect(net.fc.weight.shape).toEqual([10, 32]);
    expect(net.quant.scale).toBe(1 / 128);
    const wide = new ShortcutResNet(2, [16, 32, 64]);
    // the reference network's widths give its 77,754 parameters
    expect(wide.parameters().reduce((n, p) => n + p.size, 0)).toBe(77754);
    const out = call(net.eval(), rand([2, 1, 28, 28], { generator: new Generator(4) }));
    expect(out.shape).toEqual([2, 10]);
  });

  it('builds ConvSkipNet conv1, conv2, then fc from one generator, with the sigmoid only when asked', () => {
    const net = new ConvSkipNet({ generator: new Generator(11), inChannels: 2, sigmoid: true });
    const g = new Generator(11);
    new Conv2d(2, 4, 3, { padding: 1, generator: g });
    const conv2 = new Conv2d(4, 4, 3, { padding: 1, generator: g });
    const fc = new Linear(4, 3, { generator: g });
    expect(values(net.conv2.weight)).toEqual(values(conv2.weight));
    expect(values(net.fc.bias!)).toEqual(values(fc.bias!));
    expect(net.namedChildren().map(([n]) => n)).toEqual(
      'quant conv1 bn1 relu1 conv2 sig pool flatten fc dequant'.split(' '),
    );
    const plain = new ConvSkipNet({ generator: new Generator(11), inChannels: 2 });
    expect(plain.sig).toBeUndefined();
    const x = rand([1, 2, 5, 5], { generator: new Generator(2) });
    expect(values(call(plain.eval(), x))).not.toEqual(values(call(net.eval(), x)));
  });

  it('builds ResidualSigmoidNet as a TinyResNet of 6 channels, an 8-channel head and the sigmoid before the pool', () => {
    const net = new ResidualSigmoidNet();
    const g = new Generator(5);
    new Conv2d(3, 6, 3, { padding: 1, generator: g });
    new Conv2d(6, 6, 3, { padding: 1, generator: g });
    const conv2 = new Conv2d(6, 8, 1, { generator: g });
    const fc = new Linear(8, 4, { generator: g });
    expect(values(net.conv2.weight)).toEqual(values(conv2.weight));
    expect(values(net.fc.weight)).toEqual(values(fc.weight));
    expect(net.namedChildren().map(([n]) => n)).toEqual(
      'quant conv0 bn0 relu0 conv1 bn1 relu1 conv2 act pool flatten fc dequant'.split(' '),
    );
    expect(new TinyResNet().act).toBeUndefined();
    const custom = new TinyResNet(5, { channels: 6, headChannels: 8, sigmoid: true });
    const x = rand([1, 3, 4, 4], { generator: new Generator(8) });
    expect(values(call(custom.eval(), x))).toEqual(values(call(net.eval(), x)));
  });

  it('wraps one module (under the name asked for) or one function in SingleOpNet', () => {
    const x = tensor([-2, 0, 0.5], [1, 3]);
    const byModule = new SingleOpNet(new Tanh(), 'act');
    expect(byModule.namedChildren().map(([n]) => n)).toEqual(['quant', 'dequant', 'act']);
    expect(values(call(byModule, x))).toEqual(values(x.tanh()));
    const byFunction = new SingleOpNet((q) => q.mul(3));
    expect(byFunction.namedChildren().map(([n]) => n)).toEqual(['quant', 'dequant']);
    expect(values(call(byFunction, x))).toEqual([-6, 0, 1.5]);
    expect(new SingleOpNet(new Tanh()).getChild('op')).toBeInstanceOf(Tanh);
  });
});
