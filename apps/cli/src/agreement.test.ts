import { Tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { agreement, agreementText } from './agreement.js';
import { CliError } from './io.js';

const t = (...v: number[]) => new Tensor({ data: Float32Array.from(v), shape: [1, v.length], dtype: 'float32' });

describe('agreement of the fixed-point with the fake-quant model', () => {
  it('is max |fixed-point - fake-quant|', () => {
    expect(agreement(t(1, 2, 3), t(1, 2.5, 2), 'm.onnx')).toBe(1);
  });

  it('is printed in output units and as a share of the fake-quant output range', () => {
    expect(agreementText(0.05, t(-1, 0, 1.5), 'the first 2 calibration samples')).toBe(
      'max |fixed-point - fake-quant| = 0.0500 (output units, 2.00 % of the output range 2.50) on the first 2 calibration samples',
    );
    expect(agreementText(0, t(3, 3), 'x')).toBe('max |fixed-point - fake-quant| = 0.00 (output units) on x');
  });

  it.each([
    ['NaN in the fixed-point output', t(1, 2), t(NaN, 2), /the fixed-point model gives non-finite outputs/],
    ['NaN in the fake-quant output', t(1, NaN), t(1, 2), /the fake-quant model gives non-finite outputs/],
    ['NaN first, then a finite difference', t(NaN, 0), t(0, 5), /the fake-quant model gives non-finite outputs/],
    ['+Infinity', t(Infinity), t(1), /the fake-quant model gives non-finite outputs/],
    [
      'outputs of different sizes',
      t(1, 2),
      t(1),
      /the fixed-point model gives 1 output values on the first calibration batch, the fake-quant model 2/,
    ],
  ])('%s: an error naming the model (never "NaN"), with the warnings', (_what, fq, fp, want) => {
    let err: unknown;
    try {
      agreement(fq, fp, 'net.onnx', ["calibration: fake-quant 'relu.activationPostProcess' saw no finite value"]);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(CliError);
    expect((err as CliError).exitCode).toBe(1);
    const m = (err as Error).message;
    expect(m).toMatch(/^cannot quantize net\.onnx: /);
    expect(m).toMatch(want);
    expect(m).toContain('nothing written');
    expect(m).toContain("\nwarnings:\n  - calibration: fake-quant 'relu.activationPostProcess' saw no finite value");
  });
});
