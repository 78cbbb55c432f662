import { describe, expect, it } from 'vitest';
import { closeNames, didYouMean } from './close-names.js';

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

describe('didYouMean', () => {
  it('ends a message with the close names, or with nothing', () => {
    expect(didYouMean(['bayes'])).toBe("; did you mean 'bayes'?");
    expect(didYouMean(['mse', 'mix'])).toBe("; did you mean 'mse' or 'mix'?");
    expect(didYouMean([])).toBe('');
    expect(`unknown march 'bayse'${didYouMean(closeNames('bayse', ['bayes', 'bernoulli2']))}`).toBe(
      "unknown march 'bayse'; did you mean 'bayes'?",
    );
  });
});
