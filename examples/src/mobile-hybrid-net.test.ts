// The MobileNet-style hybrid example network: its shapes, its graph, the ops bernoulli2's table
// lacks (the CPU nodes of a hybrid deployment), and short PTQs on the embedded subset: bayes with
// every op on the BPU, bernoulli2 in hybrid mode.
import '@qtk/march-bayes';
import '@qtk/march-bernoulli2';
import { modelFromBytes, modelToBytes } from '@qtk/core';
import { fuseFx } from '@qtk/fusion';
import { checkDeployDevice, hybridPartitioner } from '@qtk/hybrid';
import { symbolicTrace } from '@qtk/ir';
import { agreement } from '@qtk/nn';
import { BAYES_CAPABILITIES } from '@qtk/march-bayes';
import { BERNOULLI2_CAPABILITIES } from '@qtk/march-bernoulli2';
import { type CapabilityTable, checkOpSupport, opOfNode } from '@qtk/spec';
import { Generator, noGrad, randn, type Tensor } from '@qtk/tensor';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadDataset, SUBSET_DIR } from './data.js';
import { MobileHybridNet } from './mobile-hybrid-net.js';
import { firstBatches, postTrainingQuantize } from './ptq.js';
import { accuracyOf, predict, trainFloat } from './train.js';

const bits = (t: Tensor) => Array.from(t.values());

/** The modules bernoulli2's capability table has no op for: hardswish and the global average pools. */
// bernoulli2's table lacks these; its conversion runs the adaptive pools (small windows) as average pools
const BERNOULLI2_TABLE_MISSING = [
  'stem.2',
  'block1.expand.2',
  'block1.depthwise.2',
  'block1.se.pool',
  'block2.expand.2',
  'block2.depthwise.2',
  'block2.se.pool',
  'pool',
];
const BERNOULLI2_CPU = BERNOULLI2_TABLE_MISSING.filter((name) => !name.endsWith('pool'));

/** Catalog ops of the fused graph for a march, each with whether the march's table takes it. */
function placement(march: string, table: CapabilityTable): { node: string; op: string; ok: boolean }[] {
  const gm = fuseFx(new MobileHybridNet({ generator: new Generator(0) }), { march });
  const out: { node: string; op: string; ok: boolean }[] = [];
  for (const node of gm.graph.nodes) {
    const match = opOfNode(gm, node);
    if (!match) continue;
    out.push({ node: node.name, op: match.op, ok: checkOpSupport(table, { op: match.op, attrs: match.attrs }).ok });
  }
  return out;
}

describe('MobileHybridNet', () => {
  it('maps [N, 1, 28, 28] to 10 logits through a 14×14 pyramid merge', () => {
    const net = new MobileHybridNet({ generator: new Generator(1) });
    const x = randn([3, 1, 28, 28], { generator: new Generator(2) });
    const fine = net.stem.call(net.quant.call(x));
    expect(fine.shape).toEqual([3, 16, 14, 14]);
    const coarse = net.block2.call(net.block1.call(fine));
    expect(coarse.shape).toEqual([3, 32, 7, 7]);
    expect(net.up.call(coarse).shape).toEqual([3, 32, 14, 14]);
    expect(net.call(x).shape).toEqual([3, 10]);
    expect(net.parameters().reduce((n, p) => n + p.size, 0)).toBe(13_458);
  });

  it('traces to a graph with depthwise convs, hardswish, squeeze-excite, upsample + cat and tanh', () => {
    const net = new MobileHybridNet({ generator: new Generator(3) }).eval();
    const gm = symbolicTrace(net);
    const ops = gm.graph.nodes.map((n) => opOfNode(gm, n)).filter((m) => m !== null);
    const count = (op: string) => ops.filter((m) => m.op === op).length;
    expect(count('HardSwish')).toBe(5);
    expect(count('Sigmoid')).toBe(2);
    expect(count('Mul')).toBe(2);
    expect(count('Resize')).toBe(1);
    expect(count('Concat')).toBe(1);
    expect(count('Tanh')).toBe(1);
    expect(ops.filter((m) => m.op === 'Conv' && (m.attrs.groups as number) > 1).map((m) => m.attrs.groups)).toEqual([
      32, 64, 48,
    ]);
    const x = randn([2, 1, 28, 28], { generator: new Generator(4) });
    expect(bits(gm.call(x))).toEqual(bits(net.call(x)));
  });

  it('has every op on bayes; bernoulli2 lacks hardswish and the global average pool', () => {
    expect(placement('bayes', BAYES_CAPABILITIES).filter((p) => !p.ok)).toEqual([]);
    const missing = placement('bernoulli2', BERNOULLI2_CAPABILITIES).filter((p) => !p.ok);
    expect(missing.map((p) => p.node)).toEqual(BERNOULLI2_TABLE_MISSING.map((name) => name.replaceAll('.', '_')));
    expect(new Set(missing.map((p) => p.op))).toEqual(new Set(['HardSwish', 'AdaptiveAveragePool']));
  });

  describe('after one epoch on the subset', () => {
    const train = loadDataset(SUBSET_DIR, 'train');
    const test = loadDataset(SUBSET_DIR, 'test', 500);
    let net: MobileHybridNet;
    let float = 0;
    beforeAll(() => {
      net = new MobileHybridNet({ generator: new Generator(5) });
      trainFloat(net, train, { epochs: 1, lr: 0.1, seed: 5 });
      float = accuracyOf(predict(net, test), test);
    }, 120_000); // one epoch on 4,000 images: about 5 s on an idle machine, several times that on a loaded one

    it('calibrates and converts to bayes fixed point close to its fake-quant model', () => {
      expect(float).toBeGreaterThan(0.5);
      const { calibrated, fixedPoint } = postTrainingQuantize(net, {
        march: 'bayes',
        calibration: firstBatches(train, 256),
      });
      expect(fixedPoint.meta).toMatchObject({ kind: 'fixed-point', march: 'bayes' });
      const fake = predict(calibrated, test);
      const fixed = predict(fixedPoint, test);
      expect(agreement(fake, fixed)).toBeGreaterThanOrEqual(0.99);
      expect(Math.abs(accuracyOf(fixed, test) - float)).toBeLessThan(0.02);
      const x = firstBatches(test, 8)[0]!;
      expect((noGrad(() => fixedPoint.call(x)) as Tensor).shape).toEqual([8, 10]);
    });

    it('converts to a bernoulli2 hybrid model with exactly the missing ops on the CPU', () => {
      const { calibrated, fixedPoint } = postTrainingQuantize(net, {
        march: 'bernoulli2',
        calibration: firstBatches(train, 256),
        prepare: { hybrid: true, partitioner: hybridPartitioner },
      });
      const report = checkDeployDevice(fixedPoint);
      expect(report.nodes.filter((n) => n.device === 'CPU').map((n) => n.name)).toEqual(BERNOULLI2_CPU);
      expect(report.counts).toEqual({ BPU: 25, CPU: 5 });
      const fake = predict(calibrated, test);
      const fixed = predict(fixedPoint, test);
      expect(agreement(fake, fixed)).toBeGreaterThanOrEqual(0.99);
      expect(Math.abs(accuracyOf(fixed, test) - float)).toBeLessThan(0.02);

      // saved and loaded like any fixed-point model: same devices, same logits bit for bit
      const loaded = modelFromBytes(modelToBytes(fixedPoint));
      expect(loaded).toMatchObject({ kind: 'fixed-point', march: 'bernoulli2' });
      expect(checkDeployDevice(loaded.model)).toEqual(report);
      const x = firstBatches(test, 32)[0]!;
      expect(bits(noGrad(() => loaded.model.call(x)) as Tensor)).toEqual(
        bits(noGrad(() => fixedPoint.call(x)) as Tensor),
      );
    });
  });
});
