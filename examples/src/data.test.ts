import { describe, expect, it } from 'vitest';
import { dataDirOf, SUBSET_DIR } from './data.js';

describe('dataDirOf', () => {
  it('takes the committed subset without --data, and a named folder as the full set', () => {
    expect(dataDirOf(undefined)).toEqual({ dir: SUBSET_DIR, full: null });
    expect(dataDirOf('/data/fashion')).toEqual({ dir: '/data/fashion', full: '/data/fashion' });
  });
});
