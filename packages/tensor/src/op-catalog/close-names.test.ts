import { describe, expect, it } from 'vitest';
import { closeNames } from './close-names.js';

describe('closeNames', () => {
  it('counts a swap of two adjacent letters as one edit', () => {
    expect(closeNames('bayse', ['bayes', 'bernoulli2'])).toEqual(['bayes']);
    expect(closeNames('obsrever', ['observer', 'out'])).toEqual(['observer']);
  });

  it('puts a case-only difference first, then containment, then edits', () => {
    expect(closeNames('MSE', ['min_max', 'mse', 'mix'])).toEqual(['mse']);
    expect(closeNames('percentil', ['percentile', 'kl'])).toEqual(['percentile']);
    expect(closeNames('zzz', ['min_max', 'mse'])).toEqual([]);
  });
});
