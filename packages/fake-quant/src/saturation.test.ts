import { Tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { countClamped, FakeQuantize } from './index.js';
import { SATURATION_WARNING_SHARE } from './saturation.js';

const tensor = (values: number[], shape = [values.length]) =>
  new Tensor({ data: Float32Array.from(values), shape, dtype: 'float32' });

/** A fixed-scale 1/128 qint8 fake-quant (a QuantStub for inputs in [-1, 1]) after calibrating on `values`. */
function calibrated(values: number[]): FakeQuantize {
  const fq = new FakeQuantize({ observer: 'fixed_scale', observerOptions: { scale: 1 / 128 }, state: 'CALIBRATION' });
  fq.call(tensor(values));
  return fq;
}

describe('countClamped: a value is saturated only when clamping changes it', () => {
  it('the limits and values rounding brings back are not clamped; values half a step beyond are', () => {
    const s = 1 / 128;
    // -1 = -128·s and 127·s are representable; 127.4·s and -128.4·s round back into the range
    const values = [-1, 127 * s, 127.4 * s, -128.4 * s, 0, 127.6 * s, -128.6 * s, 1, 255, Number.NaN];
    expect(countClamped(tensor(values), [s], -1, -128, 127)).toEqual({ seen: 9, clamped: 4 });
  });

  it('per channel: each value against its channel scale', () => {
    // channel 0 scale 1 (range [-128, 127]), channel 1 scale 0.01 (range [-1.28, 1.27])
    const x = tensor([-130, 100, 2, 1], [2, 2]);
    expect(countClamped(x, [1, 0.01], 0, -128, 127)).toEqual({ seen: 4, clamped: 2 });
  });
});

describe('a fixed-scale fake-quant reports clamped calibration data', () => {
  it('0..255 data against scale 1/128 is an issue naming the share, the range and what to do', () => {
    const pixels = Array.from({ length: 256 }, (_, i) => i);
    const fq = calibrated(pixels);
    // only 0 fits in [-1, 0.9921875] (1 = 128·s rounds to 128)
    expect(fq.saturation).toEqual({ seen: 256, clamped: 255 });
    expect(fq.calibrationIssue()).toBe(
      'clamped 99.6 % of the values it saw (255 of 256 lie beyond [-1, 0.9921875] (fixed scale 0.0078125)): ' +
        'the data does not fit the fixed scale; normalise it to the range, or give it a scale that fits (or an observer)',
    );
  });

  it('data in [-1, 1], half of it exactly -1 and some exactly +1, is not an issue', () => {
    const values = [
      ...Array(500).fill(-1),
      ...Array.from({ length: 480 }, (_, i) => -1 + i / 240),
      ...Array(20).fill(1),
    ];
    const fq = calibrated(values);
    // only the +1s are clamped (1 = 128·s rounds to 128 > 127): 2 %, under the warning share
    expect(fq.saturation).toEqual({ seen: 1000, clamped: 20 });
    expect(20 / 1000).toBeLessThan(SATURATION_WARNING_SHARE);
    expect(fq.calibrationIssue()).toBeNull();
  });

  it('observers that choose the scale have no saturation count', () => {
    const fq = new FakeQuantize({ observer: 'min_max', state: 'CALIBRATION' });
    fq.call(tensor([0, 255]));
    expect(fq.saturation).toBeNull();
    expect(fq.calibrationIssue()).toBeNull();
  });
});
