import '@qtk/march-bayes';
import { getDefaultQconfig } from '@qtk/fake-quant';
import { symbolicTrace } from '@qtk/ir';
import { Conv2d, Flatten, Linear, Module, ReLU } from '@qtk/nn';
import { Generator, rand, Tensor } from '@qtk/tensor';
import { describe, expect, it, vi } from 'vitest';
import { calibrate, calibrationIssues, prepareQatFx } from './index.js';

class Net extends Module {
  readonly conv: Conv2d;
  readonly relu = new ReLU();
  readonly flat = new Flatten();
  readonly fc: Linear;
  constructor() {
    super();
    const g = new Generator(1);
    this.conv = new Conv2d(1, 2, 3, { generator: g });
    this.fc = new Linear(2 * 4 * 4, 3, { generator: g });
  }
  forward(x: Tensor): Tensor {
    return this.fc.call(this.flat.call(this.relu.call(this.conv.call(x))));
  }
}

const prepared = (inputScale: number | 'auto') =>
  prepareQatFx(
    symbolicTrace(new Net()),
    { global: getDefaultQconfig('fake_quant', 'fake_quant', 'min_max', 'min_max') },
    {
      march: 'bayes',
      inputQuantStubs: inputScale === 'auto' ? true : { scale: inputScale },
      onWarning: () => {},
    },
  );
const filled = (v: number) =>
  new Tensor({ data: new Float32Array(2 * 36).fill(v), shape: [2, 1, 6, 6], dtype: 'float32' });

describe('calibrate reports fake-quants whose scale does not describe the data', () => {
  it.each([
    ['all-NaN batches', [filled(NaN)], 1, /saw no finite value .*placeholder 1\.0/],
    ['no batches', [], 1, /saw no finite value/],
    ['all-zero batches, input scale auto', [filled(0)], 'auto', /saw only zeros/],
  ] as const)('%s: a warning naming each such fake-quant', (_what, batches, scale, want) => {
    const gm = prepared(scale);
    const warnings: string[] = [];
    calibrate(gm, batches, { onWarning: (m) => warnings.push(m) });
    expect(warnings.length).toBeGreaterThan(0);
    const issues = calibrationIssues(gm);
    expect(warnings).toEqual(issues.map((i) => `calibration: fake-quant '${i.module}' ${i.issue}`));
    for (const w of warnings) expect(w).toMatch(want);
    // the module names are those of the prepared model's fake-quants
    const names = new Set(gm.namedModules().map(([n]) => n));
    for (const i of issues) expect(names.has(i.module)).toBe(true);
  });

  it('all-NaN input: the activation fake-quants are named', () => {
    const gm = prepared('auto');
    const warnings: string[] = [];
    calibrate(gm, [filled(NaN)], { onWarning: (m) => warnings.push(m) });
    expect(warnings.some((w) => /fake-quant '[^']*'/.test(w))).toBe(true);
    expect(calibrationIssues(gm).length).toBeGreaterThanOrEqual(2); // the input stub and at least one activation
  });

  it('real data: no warning', () => {
    const gm = prepared('auto');
    const onWarning = vi.fn();
    calibrate(gm, [rand([4, 1, 6, 6], { low: -1, high: 1, generator: new Generator(2) })], { onWarning });
    expect(onWarning).not.toHaveBeenCalled();
  });

  it('without onWarning the report goes to console.warn', () => {
    const spy = vi.spyOn(console, 'warn').mockImplementation(() => {});
    try {
      calibrate(prepared(1 / 128), [filled(NaN)]);
      expect(spy).toHaveBeenCalled();
      expect(String(spy.mock.calls[0]![0])).toMatch(/^\[qtk\] calibration: fake-quant '.*' saw no finite value/);
    } finally {
      spy.mockRestore();
    }
  });
});

describe('calibrate: a fixed-scale input stub that clamps the data is reported', () => {
  /** n samples of 6×6 pixels, values from `pixel(i)` (a ramp over the batch). */
  const ramp = (pixel: (i: number) => number) => {
    const data = Float32Array.from({ length: 4 * 36 }, (_, i) => pixel(i));
    return new Tensor({ data, shape: [4, 1, 6, 6], dtype: 'float32' });
  };

  it('unnormalised 0..255 data against scale 1/128 warns, naming the stub', () => {
    const warnings: string[] = [];
    calibrate(prepared(1 / 128), [ramp((i) => (i * 7) % 256)], { onWarning: (m) => warnings.push(m) });
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(
      /^calibration: fake-quant '_generated_quant_stub_0\.activationPostProcess' clamped 99\.3 % of the values it saw \(143 of 144 lie beyond \[-1, 0\.9921875\]/,
    );
  });

  it('data normalised to [-1, 1] (a third of it exactly -1) does not warn', () => {
    const warnings: string[] = [];
    calibrate(prepared(1 / 128), [ramp((i) => (i % 3 === 0 ? -1 : ((i % 255) / 255) * 2 - 1))], {
      onWarning: (m) => warnings.push(m),
    });
    expect(warnings).toEqual([]);
  });
});
