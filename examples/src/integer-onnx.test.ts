// The CI-sized version of `pnpm integer-onnx`: the reference network (the demo's weights) and a
// seeded MobileHybridNet, both marches, exported as integer ONNX and run in onnxruntime-node on
// subset images: every output and every intermediate of the first batch must be bit-identical.
import { hybridPartitioner } from '@qtk/hybrid';
import '@qtk/march-bayes';
import '@qtk/march-bernoulli2';
import { loadStateDictFileSync } from '@qtk/nn/node';
import { Generator } from '@qtk/tensor';
import { describe, expect, test } from 'vitest';
import { loadDataset, SUBSET_DIR } from './data.js';
import { checkIntegerOnnx } from './integer-onnx-check.js';
import { MobileHybridNet } from './mobile-hybrid-net.js';
import { firstBatches, postTrainingQuantize } from './ptq.js';
import { ReferenceNet } from './reference-net.js';

const calibration = firstBatches(loadDataset(SUBSET_DIR, 'train', 256), 256);
const test_ = loadDataset(SUBSET_DIR, 'test', 200);

function referenceNet(): ReferenceNet {
  const m = new ReferenceNet();
  m.loadStateDict(loadStateDictFileSync(new URL('../../apps/demo/assets/reference-net.qtk', import.meta.url).pathname));
  return m;
}

describe('integer ONNX in onnxruntime-node equals QTK bit for bit', () => {
  for (const march of ['bayes', 'bernoulli2']) {
    test(`reference network, ${march}`, async () => {
      const { fixedPoint } = postTrainingQuantize(referenceNet(), { march, calibration, observer: 'min_max' });
      const r = await checkIntegerOnnx(fixedPoint, test_, { batchSize: 100, intermediateSamples: 16 });
      expect(r.intermediates.summary).toMatch(/^all \d+ compared values identical$/);
      expect(r.intermediates.nodes).toBeGreaterThan(12);
      expect(r.identicalOutputs).toBe(1);
      expect(r.accuracy.onnxruntime).toBe(r.accuracy.qtk);
      expect(r.accuracy.qtk).toBeGreaterThan(0.8);
    });
  }

  test('MobileHybridNet, bayes with int16 layers', async () => {
    const float = new MobileHybridNet({ generator: new Generator(3) });
    const dtypes = { 'block1.se': 'qint16', mergePointwise: 'qint16' } as const;
    const { fixedPoint } = postTrainingQuantize(float, { march: 'bayes', calibration, observer: 'min_max', dtypes });
    const kinds = new Set(
      fixedPoint.graph.nodes
        .filter((n) => n.op === 'call_module')
        .map((n) => fixedPoint.getSubmodule(n.target).constructor.name),
    );
    expect([...kinds].sort()).toEqual([
      'Dequantize',
      'FixedAvgPool2d',
      'FixedCat',
      'FixedConv',
      'FixedMul',
      'FixedTableOp',
      'FixedValueOp',
      'Quantize',
    ]);
    const r = await checkIntegerOnnx(fixedPoint, test_, { batchSize: 100, intermediateSamples: 16 });
    expect(r.intermediates.summary).toMatch(/^all \d+ compared values identical$/);
    expect(r.identicalOutputs).toBe(1);
  });

  test('MobileHybridNet, bernoulli2 in hybrid mode (float CPU ops between the integer segments)', async () => {
    const float = new MobileHybridNet({ generator: new Generator(3) });
    const { fixedPoint } = postTrainingQuantize(float, {
      march: 'bernoulli2',
      calibration,
      observer: 'min_max',
      prepare: { hybrid: true, partitioner: hybridPartitioner },
    });
    const kinds = new Set(
      fixedPoint.graph.nodes
        .filter((n) => n.op === 'call_module')
        .map((n) => fixedPoint.getSubmodule(n.target).constructor.name),
    );
    expect(kinds).toContain('Hardswish');
    const r = await checkIntegerOnnx(fixedPoint, test_, { batchSize: 100, intermediateSamples: 16 });
    expect(r.intermediates.summary).toMatch(/^all \d+ compared values identical$/);
    expect(r.identicalOutputs).toBe(1);
  });
});
