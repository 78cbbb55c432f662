import { Generator, randn, ShapeError } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { BatchNorm1d, BatchNorm2d, BatchNorm3d } from './normalization.js';
import { SyncBatchNorm } from './sync-batch-norm.js';

describe('SyncBatchNorm', () => {
  it('behaves as BatchNorm1d/2d/3d on one worker: same outputs and running stats, in training and eval', () => {
    const g = new Generator(4);
    for (const [Ref, shape] of [
      [BatchNorm1d, [6, 3]],
      [BatchNorm1d, [4, 3, 5]],
      [BatchNorm2d, [2, 3, 4, 4]],
      [BatchNorm3d, [2, 3, 2, 3, 3]],
    ] as const) {
      const sync = new SyncBatchNorm(3, { momentum: 0.2 });
      const ref = new Ref(3, { momentum: 0.2 });
      for (let step = 0; step < 2; step++) {
        const x = randn([...shape], { generator: g });
        expect([...sync.call(x).values()]).toEqual([...ref.call(x).values()]);
      }
      expect([...sync.runningVar!.values()]).toEqual([...ref.runningVar!.values()]);
      sync.eval();
      ref.eval();
      const x = randn([...shape], { generator: g });
      expect([...sync.call(x).values()]).toEqual([...ref.call(x).values()]);
    }
  });

  it('rejects 1-d inputs and a wrong channel count', () => {
    const bn = new SyncBatchNorm(3);
    expect(() => bn.call(randn([3]))).toThrow(ShapeError);
    expect(() => bn.call(randn([2, 4, 5]))).toThrow(/4 channels/);
  });
});
