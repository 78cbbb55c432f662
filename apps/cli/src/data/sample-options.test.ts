import { describe, expect, it } from 'vitest';
import { sampleRunOptions } from './sample-options.js';

describe('sampleRunOptions', () => {
  it("names the command's verb in split and limit and takes its batch default, in the help's order", () => {
    const o = sampleRunOptions('evaluate', 100);
    expect(o.split).toMatchObject({ description: 'which IDX split to evaluate', default: 'test' });
    expect(o.limit).toMatchObject({ description: 'evaluate only the first N samples', integer: true, min: 1 });
    expect(o.batch).toMatchObject({ default: 100, min: 1 });
    expect(sampleRunOptions('run', 16).batch).toMatchObject({ default: 16 });
    expect(Object.keys(o)).toEqual([
      'split',
      'input-shape',
      'batch',
      'limit',
      'engine',
      'mean',
      'std',
      'size',
      'max-elements',
    ]);
  });
});
