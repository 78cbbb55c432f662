// The partition asks the march's converter (supportsNode), not the table alone: what plain conversion
// runs on the BPU stays there, and what it refuses goes to the CPU with the converter's reason.
import { calibrate, convertFx, prepareQatFx } from '@qtk/core';
import { defaultQatQconfig } from '@qtk/fake-quant';
import '@qtk/march-bayes';
import '@qtk/march-bernoulli2';
import { AdaptiveAvgPool2d, Conv2d, DeQuantStub, Flatten, Linear, Module, QuantStub } from '@qtk/nn';
import { Generator, rand, type Tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { prepareHybrid } from './testing/prepare-hybrid.js';
import { checkDeployDevice } from './index.js';

class GlobalPoolNet extends Module {
  readonly quant = new QuantStub();
  readonly conv = new Conv2d(3, 4, 3, { padding: 1, generator: new Generator(1) });
  readonly pool = new AdaptiveAvgPool2d(1);
  readonly flat = new Flatten();
  readonly fc = new Linear(4, 2, { generator: new Generator(2) });
  readonly dequant = new DeQuantStub();
  forward(x: Tensor): Tensor {
    return this.dequant.call(this.fc.call(this.flat.call(this.pool.call(this.conv.call(this.quant.call(x))))));
  }
}

describe('one predicate for the partition and the converter', () => {
  it('bernoulli2: an adaptive average pool stays on the BPU in hybrid mode, as plain conversion runs it (as an AveragePool)', () => {
    const x = rand([2, 3, 6, 6], { low: -1, high: 1, generator: new Generator(3) });
    const qat = prepareHybrid(new GlobalPoolNet(), 'bernoulli2');
    const report = checkDeployDevice(qat);
    expect(report.nodes.map((n) => [n.name, n.device, n.reason])).toEqual([
      ['conv', 'BPU', 'supported'],
      ['pool', 'BPU', 'supported'],
      ['flat', 'BPU', 'supported'],
      ['fc', 'BPU', 'supported'],
    ]);
    calibrate(qat, [x]);
    const fixed = convertFx(qat, { onWarning: () => {} });
    const kinds = fixed.graph.nodes
      .filter((n) => n.op === 'call_module')
      .map((n) => fixed.getSubmodule(n.target).constructor.name);
    // one quantize at the input, one dequantize at the output: no CPU step in between
    expect(kinds).toEqual(['Quantize', 'FixedConv', 'FixedAvgPool2d', 'FixedValueOp', 'FixedConv', 'Dequantize']);
  });
});

describe('the hybrid guarantee: what conversion refuses after calibration runs on the CPU', () => {
  const x = rand([2, 3, 9, 9], { low: -1, high: 1, generator: new Generator(5) });

  it('bernoulli2: a 9×9 adaptive pool (a window over the AveragePool limit of 7) goes to the CPU, with the reason, and the model converts', () => {
    const warnings: string[] = [];
    const qat = prepareHybrid(new GlobalPoolNet(), 'bernoulli2');
    calibrate(qat, [x]);
    const fixed = convertFx(qat, { onWarning: (m) => warnings.push(m) });
    const pool = checkDeployDevice(fixed).nodes.find((n) => n.name === 'pool')!;
    expect(pool).toMatchObject({
      device: 'CPU',
      reason: 'conversion refused',
      detail: 'as an AveragePool its 9×9 window (input 9×9) exceeds the kernel limit of 7',
    });
    expect(warnings).toEqual([
      "pool: runs on the CPU, march 'bernoulli2' cannot convert it (as an AveragePool its 9×9 window (input 9×9) exceeds the kernel limit of 7)",
    ]);
    // the fixed-point model runs and agrees with the fake-quant model within a few output steps
    const out = (fixed.call(x) as Tensor).values() as Float32Array;
    const ref = (qat.call(x) as Tensor).values() as Float32Array;
    let worst = 0;
    for (let i = 0; i < out.length; i++) worst = Math.max(worst, Math.abs(out[i]! - ref[i]!));
    expect(worst).toBeLessThan(0.05);
  });

  it('bernoulli2 without hybrid: conversion names the pool and the window instead of failing when the model runs', () => {
    const qat = prepareQatFx(
      new GlobalPoolNet(),
      { global: defaultQatQconfig },
      { march: 'bernoulli2', onWarning: () => {} },
    );
    calibrate(qat, [x]);
    expect(() => convertFx(qat, { onWarning: () => {} })).toThrow(
      /pool: AdaptiveAvgPool2d \(AdaptiveAveragePool \/ AveragePool\) \(as an AveragePool its 9×9 window \(input 9×9\) exceeds the kernel limit of 7\)/,
    );
  });
});
