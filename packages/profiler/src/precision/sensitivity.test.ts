import '@qtk/march-bayes';
import '@qtk/march-bernoulli2';
import { prepareQatFx } from '@qtk/core';
import { argmax, InvalidArgumentError } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { quantizableNodes } from './precision-variants.js';
import { sensitivity } from './sensitivity.js';
import { TinyResNet } from '@qtk/test-models';
import { calib, evalSet, saturatedAddDict } from '../testing/saturated-add.js';

describe('sensitivity', () => {
  it('names the layer with a tiny fixed scale first, and int16 recovers most of what the all-int8 model lost', () => {
    const r = sensitivity(new TinyResNet(), { march: 'bayes', calib, eval: evalSet, qconfigDict: saturatedAddDict });
    expect(r.version).toBe(1);
    expect(r.metric).toBe('cosine');
    const names = quantizableNodes(
      prepareQatFx(new TinyResNet().eval(), saturatedAddDict, { march: 'bayes', onWarning: () => {} }),
    ).map((n) => n.name);
    expect(names).toEqual(['quant', 'relu0', '_generated_add_0', 'conv2', 'pool', 'fc']);
    expect(r.nodes.map((n) => n.name).sort()).toEqual([...names].sort());
    const [worst, next] = r.nodes;
    expect(worst!.name).toBe('_generated_add_0');
    expect(worst!.sensitivity).toBeGreaterThan(10 * next!.sensitivity);
    expect(worst!.quantizedAlone!).toBeLessThan(0.9999);
    const int8Loss = 1 - r.scores.int8!;
    expect(worst!.int16Gain!).toBeGreaterThan(0.5 * int8Loss);
    for (const n of r.nodes) expect(worst!.int16Gain!).toBeGreaterThanOrEqual(n.int16Gain ?? 0);
    // the broken layer on the CPU (float) recovers too
    expect(worst!.floatGain!).toBeGreaterThan(0.5 * int8Loss);
    for (let i = 1; i < r.nodes.length; i++)
      expect(r.nodes[i - 1]!.sensitivity).toBeGreaterThanOrEqual(r.nodes[i]!.sensitivity);
    expect(JSON.parse(JSON.stringify(r))).toEqual(r); // plain JSON, no NaN / Infinity / typed arrays
    expect(r.cost.variants).toBe(1 + 3 * 6); // the all-int8 baseline, then alone, int16 and float per node
  });

  it('measures accuracy when labels are given, and only the modes asked for', () => {
    const model = new TinyResNet().eval();
    const labels = evalSet.inputs.map((x) => argmax(model.call(x), 1).values() as Int32Array);
    const r = sensitivity(model, {
      march: 'bayes',
      calib,
      eval: { inputs: evalSet.inputs, labels },
      qconfigDict: saturatedAddDict,
      modes: ['int16'],
    });
    expect(r.metric).toBe('accuracy');
    expect(r.scores.float).toBe(1); // the labels are the float model's own predictions
    expect(r.scores.int8!).toBeLessThan(1);
    for (const n of r.nodes) {
      expect(n.quantizedAlone).toBeNull();
      expect(n.floatGain).toBeNull();
      expect(n.sensitivity).toBe(Math.max(0, n.int16Gain ?? 0));
    }
    expect(r.nodes[0]!.name).toBe('_generated_add_0');
  });

  it('sqnr ranks by noise-to-signal power of the node alone', () => {
    const r = sensitivity(new TinyResNet(), {
      march: 'bayes',
      calib,
      eval: evalSet,
      qconfigDict: saturatedAddDict,
      metric: 'sqnr',
      modes: ['quantizedAlone'],
    });
    const worst = r.nodes[0]!;
    expect(worst.name).toBe('_generated_add_0');
    expect(worst.sensitivity).toBeCloseTo(10 ** (-worst.quantizedAlone! / 10), 12);
  });

  it('rejects int16 on a march without it, and names it', () => {
    expect(() => sensitivity(new TinyResNet(), { march: 'bernoulli2', calib, modes: ['int16'] })).toThrow(
      InvalidArgumentError,
    );
    expect(() => sensitivity(new TinyResNet(), { march: 'bernoulli2', calib, modes: ['int16'] })).toThrow(
      /march 'bernoulli2' has no int16 activations; drop the 'int16' mode or use a march with them \(bayes\)/,
    );
    expect(() => sensitivity(new TinyResNet(), { march: 'bayes', calib, nodes: ['conv1'] })).toThrow(
      /'conv1' is not a quantizable node; use one of quant, relu0, _generated_add_0/,
    );
    expect(() => sensitivity(new TinyResNet(), { march: 'bayes', calib, nodes: ['relu9'] })).toThrow(
      /'relu9' is not a quantizable node; use one of .*; closest: relu0$/,
    );
  });
});
