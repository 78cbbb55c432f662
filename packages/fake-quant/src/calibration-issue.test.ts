import { Tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { FakeQuantize } from './index.js';

const filled = (v: number, n = 16) => new Tensor({ data: new Float32Array(n).fill(v), shape: [n], dtype: 'float32' });

describe('FakeQuantize.calibrationIssue: a scale that does not describe the data is reported', () => {
  const cases: [string, string, Tensor[], RegExp | null][] = [];
  for (const observer of ['min_max', 'mse', 'percentile', 'kl', 'mix']) {
    cases.push([observer, 'only NaN', [filled(NaN), filled(NaN)], /^saw no finite value .*placeholder 1\.0/]);
    cases.push([observer, 'no batch at all', [], /^saw no finite value/]);
    cases.push([
      observer,
      'only zeros',
      [filled(0)],
      /^saw only zeros \(or values too close to zero for its dtype\): its scale is the float32 epsilon floor/,
    ]);
    cases.push([observer, 'constant 0.5', [filled(0.5)], null]);
    cases.push([observer, 'NaN then data', [filled(NaN), filled(1)], null]);
  }
  it.each(cases)('%s, %s', (observer, _what, batches, want) => {
    const fq = new FakeQuantize({ observer, state: 'CALIBRATION' });
    for (const b of batches) fq.call(b);
    const issue = fq.calibrationIssue();
    if (want === null) expect(issue).toBeNull();
    else expect(issue).toMatch(want);
  });

  it('per channel: only when every channel saw only zeros', () => {
    const fq = new FakeQuantize({ observer: 'min_max', chAxis: 0, numChannels: 2, state: 'CALIBRATION' });
    fq.call(new Tensor({ data: Float32Array.of(0, 0, 1, 2), shape: [2, 2], dtype: 'float32' }));
    expect(fq.calibrationIssue()).toBeNull();
    const zero = new FakeQuantize({ observer: 'min_max', chAxis: 0, numChannels: 2, state: 'CALIBRATION' });
    zero.call(new Tensor({ data: new Float32Array(4), shape: [2, 2], dtype: 'float32' }));
    expect(zero.calibrationIssue()).toMatch(/^saw only zeros/);
  });

  it('a fixed scale is never an issue', () => {
    expect(
      new FakeQuantize({ observer: 'fixed_scale', observerOptions: { scale: 0.5 } }).calibrationIssue(),
    ).toBeNull();
  });
});
