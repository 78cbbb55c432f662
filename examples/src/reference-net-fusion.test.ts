// The reference network fused: its structure implies 4 conv-bn-relu (stem and each block's first
// conv), 3 conv-bn-add-relu (each block's second conv, whose output is the add's first input) and
// 2 conv-bn (the strided blocks' 1×1 shortcuts); the fused model equals the float one in eval mode.
import { ConvAddReLU2d, fuseFx } from '@qtk/fusion';
import { symbolicTrace } from '@qtk/ir';
import { exportOnnxBytes, importOnnx } from '@qtk/onnx';
import { BatchNorm2d, Identity } from '@qtk/nn';
import { Generator, randn, type Tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { ReferenceNet } from './reference-net.js';

describe('ReferenceNet fused', () => {
  it('fuses 4 conv-bn-relu, 3 conv-bn-add-relu and 2 conv-bn, with eval outputs equal to the unfused model to 1e-5', () => {
    const g = new Generator(5);
    const model = new ReferenceNet({ generator: g });
    // move the running statistics and BN affine parameters away from their initial values
    for (let i = 0; i < 3; i++) model.call(randn([4, 1, 28, 28], { generator: g }));
    for (const m of model.modules()) {
      if (m instanceof BatchNorm2d) {
        m.weight!.values().forEach((_, k, a) => {
          a[k] = 0.5 + 0.1 * ((k * 7) % 11);
        });
        m.bias!.values().forEach((_, k, a) => {
          a[k] = 0.05 * ((k * 5) % 7) - 0.15;
        });
      }
    }
    model.eval();
    const x = randn([4, 1, 28, 28], { generator: g });
    const expected = model.call(x);

    let applied: readonly { rule: string; nodes: readonly string[] }[] = [];
    const gm = fuseFx(model, { onFused: (a) => (applied = a) });
    const count = (rule: string) => applied.filter((a) => a.rule === rule).length;
    expect(count('conv2d_bn_relu')).toBe(4);
    expect(count('conv2d_bn_add_relu')).toBe(3);
    expect(count('conv2d_bn')).toBe(2);
    expect(applied).toHaveLength(9);

    const calls = gm.graph.findNodes({ op: 'call_module' }).map((n) => n.target);
    expect(calls).toEqual([
      'quant',
      'stem.2',
      'layer1.relu1',
      'layer1._generated_add_0',
      'layer2.relu1',
      'layer2.short.1',
      'layer2._generated_add_0',
      'layer3.relu1',
      'layer3.short.1',
      'layer3._generated_add_0',
      'pool',
      'flatten',
      'fc',
      'dequant',
    ]);
    const add2 = gm.getSubmodule('layer2._generated_add_0') as ConvAddReLU2d; // the block's `y.add(s)`, fused at the add's generated name
    expect([add2.withAdd, add2.convFirst, add2.activation]).toEqual([true, true, 'relu']);
    for (const p of [
      'stem.0',
      'stem.1',
      'layer1.conv1',
      'layer1.bn1',
      'layer2.conv2',
      'layer2.bn2',
      'layer2.relu2',
      'layer3.short.0',
    ]) {
      expect(gm.getSubmodule(p), p).toBeInstanceOf(Identity);
    }
    const got = gm.call(x) as Tensor;
    const e = expected.values();
    const a = got.values();
    for (let i = 0; i < e.length; i++)
      expect(Math.abs(a[i]! - e[i]!)).toBeLessThanOrEqual(1e-5 * (1 + Math.abs(e[i]!)));
    // the float model is untouched
    expect(symbolicTrace(model).graph.findNodes({ op: 'call_module' })).toHaveLength(30);
  });

  it('fuses the same way after an ONNX round trip (export, import), with eval outputs equal to the float model', () => {
    const g = new Generator(6);
    const model = new ReferenceNet({ generator: g });
    for (let i = 0; i < 2; i++) model.call(randn([4, 1, 28, 28], { generator: g }));
    model.eval();
    const x = randn([3, 1, 28, 28], { generator: g });
    const imported = importOnnx(exportOnnxBytes(symbolicTrace(model), [x]));
    let applied: readonly { rule: string }[] = [];
    const gm = fuseFx(imported, { onFused: (a) => (applied = a) });
    expect(applied.map((a) => a.rule).sort()).toEqual(
      [...Array(4).fill('conv2d_bn_relu'), ...Array(3).fill('conv2d_bn_add_relu'), 'conv2d_bn', 'conv2d_bn'].sort(),
    );
    expect(gm.getSubmodule('_generated_add_1')).toBeInstanceOf(ConvAddReLU2d); // an imported graph is flat: the adds are the root's
    const e = model.call(x).values();
    const a = (gm.call(x) as Tensor).values();
    for (let i = 0; i < e.length; i++)
      expect(Math.abs(a[i]! - e[i]!)).toBeLessThanOrEqual(1e-5 * (1 + Math.abs(e[i]!)));
  });
});
