import { describe, expect, it } from 'vitest';
import { MinMaxObserver } from '../min-max.js';
import { t } from './random-data.js';
import { observeWholeAndSplit } from './split-observe.js';

describe('observeWholeAndSplit', () => {
  it('feeds the whole observer every batch and the merged one only the batches of the split', () => {
    const batches = [Float32Array.of(1, -2), Float32Array.of(3), Float32Array.of(0.5, -4)].map((v) => t(v));
    const { whole, merged } = observeWholeAndSplit(() => new MinMaxObserver({ averagingConstant: 1 }), batches, [
      [0],
      [1],
    ]);
    // averagingConstant 1 keeps each observer's last batch; merge takes the min of minima and max of maxima
    expect(whole.state().stats).toEqual({ min: [-4], max: [0.5] });
    expect(merged.state().stats).toEqual({ min: [-2], max: [3] });
  });
});
