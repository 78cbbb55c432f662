import { describe, expect, it } from 'vitest';
import { Generator, randn } from '@qtk/tensor';
import { ReferenceNet } from './reference-net.js';
import { evaluate, trainFloat } from './train.js';
import { SUBSET_DIR, loadDataset } from './data.js';

describe('ReferenceNet', () => {
  it('has the 77,754 parameters of the benchmark network', () => {
    const model = new ReferenceNet({ generator: new Generator(0) });
    const count = model.parameters().reduce((s, p) => s + p.size, 0);
    expect(count).toBe(77754);
  });

  it('maps [N,1,28,28] to [N,10] logits', () => {
    const model = new ReferenceNet({ generator: new Generator(0) });
    model.eval();
    const y = model.call(randn([3, 1, 28, 28], { generator: new Generator(1) }));
    expect(y.shape).toEqual([3, 10]);
    expect(y.toArray().every(Number.isFinite)).toBe(true);
  });

  it('learns Fashion-MNIST: 120 SGD steps on the embedded subset beat 70% test accuracy', { timeout: 300_000 }, () => {
    const train = loadDataset(SUBSET_DIR, 'train');
    const test = loadDataset(SUBSET_DIR, 'test', 1000);
    const model = new ReferenceNet({ generator: new Generator(0) });
    const before = evaluate(model, test);
    const result = trainFloat(model, train, { epochs: 2, lr: 0.05, seed: 0, maxSteps: 120, progress: false });
    expect(result.steps).toBe(120);
    const after = evaluate(model, test);
    expect(before).toBeLessThan(0.3);
    expect(after).toBeGreaterThan(0.7);
  });
});
