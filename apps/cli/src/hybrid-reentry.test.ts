// With --hybrid, a CPU value entering generated FloatFunctionals
// (ONNX Add / Mul between two graph values) is quantized where it re-enters the BPU.
import { join } from 'node:path';
import { calibrate, convertFx, deployDeviceOf, prepareQatFx } from '@qtk/core';
import { getDefaultQatQconfig } from '@qtk/fake-quant';
import { hybridPartitioner } from '@qtk/hybrid';
import '@qtk/march-bernoulli2';
import '@qtk/march-bayes';
import { Conv2d, FloatFunctional, Hardsigmoid, Module } from '@qtk/nn';
import { decodeModel, encodeModel, importOnnx } from '@qtk/onnx';
import { readFileSync } from 'node:fs';
import { Generator, rand, type Tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { tempDir, writeOnnx } from './testing/fixtures.js';

/** SE-style gate: conv1(x) · hardsigmoid(conv0(x)) + conv0(x), the mul and add exported as ONNX Mul / Add. */
class GateNet extends Module {
  readonly conv0: Conv2d;
  readonly conv1: Conv2d;
  readonly hs = new Hardsigmoid();
  readonly mul = new FloatFunctional();
  readonly add = new FloatFunctional();
  constructor(g: Generator) {
    super();
    this.conv0 = new Conv2d(1, 4, 3, { padding: 1, generator: g });
    this.conv1 = new Conv2d(1, 4, 1, { generator: g });
  }
  forward(x: Tensor): Tensor {
    const a = this.conv0.call(x);
    return this.add.add(this.mul.mul(this.conv1.call(x), this.hs.call(a)), a);
  }
}

describe('hybrid: a CPU value re-entering generated FloatFunctionals', () => {
  it("bernoulli2: paddle2onnx's HardSigmoid (alpha 0.2) on the CPU, the Mul and Add after it convert on the BPU", () => {
    const path = writeOnnx(join(tempDir(), 'gate.onnx'), new GateNet(new Generator(3)));
    const x = rand([2, 1, 28, 28], { generator: new Generator(4) });
    const m = decodeModel(readFileSync(path));
    for (const n of m.graph?.node ?? [])
      if (n.op_type === 'HardSigmoid')
        n.attribute = [
          { name: 'alpha', type: 1, f: 0.2 },
          { name: 'beta', type: 1, f: 0.5 },
        ];
    const float = importOnnx(encodeModel(m), { exampleInputs: { input: x } });
    float.eval();
    const prepared = prepareQatFx(
      float,
      { global: getDefaultQatQconfig() },
      {
        march: 'bernoulli2',
        hybrid: true,
        partitioner: hybridPartitioner,
        inputQuantStubs: true,
        outputDeQuantStubs: true,
        onWarning: () => {},
      },
    );
    const device = (name: string) => deployDeviceOf(prepared.graph.nodes.find((n) => n.name === name)!);
    expect([device('hs'), device('_generated_mul_0'), device('_generated_add_0')]).toEqual(['CPU', 'BPU', 'BPU']);
    calibrate(prepared, [x]);
    const fixed = convertFx(prepared, { onWarning: () => {} });
    const kind = (name: string) => fixed.getSubmodule(name).constructor.name;
    expect([kind('_generated_mul_0'), kind('_generated_add_0')]).toEqual(['FixedMul', 'FixedAdd']);
    // the CPU value is quantized where it re-enters the BPU: the mul reads a Quantize
    const mul = fixed.graph.nodes.find((n) => n.name === '_generated_mul_0')!;
    expect(mul.inputNodes.map((n) => kind(n.target))).toEqual(['FixedConv', 'Quantize']);
    const fq = (prepared.call(x) as Tensor).values() as Float32Array;
    const fp = (fixed.call(x) as Tensor).values() as Float32Array;
    let worst = 0;
    for (let i = 0; i < fq.length; i++) worst = Math.max(worst, Math.abs(fq[i]! - fp[i]!));
    expect(worst).toBeLessThan(0.05);
  });
});
