// Step-wise quantization: `moduleName: { x: null }` keeps x float inside the converted model, between a
// dequantize and a quantize whose scale prepare's boundary fake-quant observed.
import { defaultQatQconfig, FakeQuantize } from '@qtk/fake-quant';
import { Dequantize, Quantize } from '@qtk/fixed-point';
import { ConvAddReLU2d } from '@qtk/fusion';
import type { GraphModule, Node } from '@qtk/ir';
import '@qtk/march-bayes';
import '@qtk/march-bernoulli2';
import { Conv2d, DeQuantStub, Module, QuantStub, ReLU, Sequential } from '@qtk/nn';
import { Generator, rand, type Tensor } from '@qtk/tensor';
import { afterEach, describe, expect, it } from 'vitest';
import { convertFx, prepareQatFx, QatModule, resetMarch, setMarch } from './index.js';
import { FLOAT_BOUNDARY } from './stepwise-float-pass.js';
import { loadModelFileSync, saveModelFileSync } from './node.js';
import { callModel, calibratedQat, maxSteps, outputStep } from './testing/convert-harness.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const g = new Generator(8);

class HyperQuantModel extends Module {
  readonly quant = new QuantStub();
  readonly conv0 = new Conv2d(3, 3, 1, { generator: g });
  readonly conv1 = new Conv2d(3, 3, 1, { generator: g });
  readonly conv2 = new Conv2d(3, 3, 1, { generator: g });
  readonly tail = new Sequential(new Conv2d(3, 3, 1, { generator: g }), new ReLU());
  readonly dequant = new DeQuantStub();
  forward(x: Tensor): Tensor {
    const a = this.conv0.call(this.quant.call(x));
    const b = this.conv1.call(a);
    const c = this.conv2.call(b).add(b); // conv2 fused with the add at _generated_add_0; both read conv1's boundary value
    return this.dequant.call(this.tail.call(c));
  }
}

const batch = (seed: number) =>
  rand([4, 3, 5, 5], { generator: new Generator(seed) })
    .mul(2)
    .sub(1);
const kindOf = (gm: GraphModule, n: Node) =>
  n.op === 'call_module' ? gm.getSubmodule(n.target).constructor.name : n.target;
const nodeOf = (gm: GraphModule, target: string) =>
  gm.graph.nodes.find((n) => n.op === 'call_module' && n.target === target)!;

afterEach(() => resetMarch());

describe('step-wise quantization (qconfig null inside the quantized part)', () => {
  for (const march of ['bayes', 'bernoulli2']) {
    it(`${march}: conv1 with qconfig null stays a float Conv2d between a dequantize and a quantize; the rest converts; outputs match fake-quant`, () => {
      setMarch(march);
      const float = new HyperQuantModel().eval();
      const qat = calibratedQat(
        float,
        { global: defaultQatQconfig, moduleName: { conv1: null } },
        [1, 2, 3].map(batch),
      );
      expect(qat.getSubmodule('conv0')).toBeInstanceOf(QatModule);
      expect(qat.getSubmodule('conv1')).toBeInstanceOf(Conv2d); // still float in the QAT model
      expect(qat.getSubmodule('_generated_add_0')).toBeInstanceOf(QatModule); // conv2 + add
      // prepare put one fake-quant where conv1's float output enters quantized ops (conv2 and the add)
      const boundary = [...nodeOf(qat, 'conv1').users];
      expect(boundary).toHaveLength(1);
      expect(boundary[0]!.meta[FLOAT_BOUNDARY]).toBe(true);
      expect(qat.getSubmodule(boundary[0]!.target)).toBeInstanceOf(FakeQuantize);

      const fixed = convertFx(qat);
      const conv1 = nodeOf(fixed, 'conv1');
      expect(fixed.getSubmodule('conv1')).toBeInstanceOf(Conv2d);
      expect(fixed.getSubmodule('conv1')).not.toBe(float.conv1); // a copy
      expect(conv1.inputNodes.map((n) => kindOf(fixed, n))).toEqual(['Dequantize']);
      const after = [...conv1.users];
      expect(after.map((n) => fixed.getSubmodule(n.target))).toEqual([expect.any(Quantize)]);
      expect(fixed.getSubmodule('_generated_add_0').constructor.name).toBe('FixedConv');
      expect(fixed.namedModules().filter(([, m]) => m instanceof QatModule || m instanceof FakeQuantize)).toEqual([]);
      expect(fixed.namedModules().filter(([, m]) => m instanceof Dequantize)).toHaveLength(2); // before conv1, and the DeQuantStub's
      const x = batch(9);
      expect(maxSteps(callModel(qat, x), callModel(fixed, x), outputStep(qat))).toBeLessThanOrEqual(1);
    });
  }

  it('a null container keeps everything in it float (conv and relu), and the float output reaches DeQuantStub without a boundary', () => {
    setMarch('bayes');
    const qat = calibratedQat(
      new HyperQuantModel().eval(),
      { global: defaultQatQconfig, moduleName: { tail: null } },
      [1, 2].map(batch),
    );
    expect(qat.graph.nodes.filter((n) => n.meta[FLOAT_BOUNDARY] === true)).toEqual([]);
    const fixed = convertFx(qat);
    expect(fixed.getSubmodule('tail.1')).toBeInstanceOf(ConvAddReLU2d); // the float conv + relu, fused at the relu
    expect((fixed.getSubmodule('tail.1') as ConvAddReLU2d).activation).toBe('relu');
    const x = batch(10);
    const want = callModel(qat, x).values();
    const got = callModel(fixed, x).values();
    // the tail runs the same float ops on the dequantized input, which is within one step of fake-quant:
    // its output differs by at most one step times the largest row sum of |W|
    const step = (qat.getSubmodule('_generated_add_0') as QatModule).activationPostProcess!.calculateQparams()
      .scale[0]!;
    const w = (fixed.getSubmodule('tail.1') as ConvAddReLU2d).conv.weight.values();
    const rowSum = Math.max(
      ...[0, 1, 2].map((o) => Math.abs(w[3 * o]!) + Math.abs(w[3 * o + 1]!) + Math.abs(w[3 * o + 2]!)),
    );
    let worst = 0;
    for (let i = 0; i < want.length; i++) worst = Math.max(worst, Math.abs(got[i]! - want[i]!));
    expect(worst).toBeLessThanOrEqual(step * rowSum + 1e-6);
    expect(worst).toBeGreaterThan(0); // it did run on the integer model's values
  });

  it('survives a model file round trip of the QAT model', () => {
    setMarch('bayes');
    const qat = calibratedQat(
      new HyperQuantModel().eval(),
      { global: defaultQatQconfig, moduleName: { conv1: null } },
      [1, 2].map(batch),
    );
    const dir = mkdtempSync(join(tmpdir(), 'qtk-stepwise-'));
    try {
      saveModelFileSync(qat, join(dir, 'qat.qtk'));
      const loaded = loadModelFileSync(join(dir, 'qat.qtk')).model as GraphModule;
      const a = convertFx(qat);
      const b = convertFx(loaded);
      const x = batch(11);
      expect(callModel(b, x).values()).toEqual(callModel(a, x).values());
      expect(b.getSubmodule('conv1')).toBeInstanceOf(Conv2d);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('prepare without fusion gives the same float step', () => {
    setMarch('bayes');
    const qat = prepareQatFx(
      new HyperQuantModel().eval(),
      { global: defaultQatQconfig, moduleName: { conv1: null } },
      { fuse: false },
    );
    expect([...nodeOf(qat, 'conv1').users].every((u) => u.meta[FLOAT_BOUNDARY] === true)).toBe(true);
  });
});
