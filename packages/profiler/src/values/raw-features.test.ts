import '@qtk/march-bayes';
import type { QatModule } from '@qtk/core';
import { subAt } from '@qtk/ir';
import { QuantStub } from '@qtk/nn';
import { InvalidArgumentError, tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { captureNodeValues } from './node-values.js';
import { getRawFeatures, outlierOf } from './raw-features.js';
import { randomInputs, TinyResNet } from '@qtk/test-models';
import { stagesOf } from '../testing/stages.js';

const x = randomInputs(11, 4);

/** min, max, mean, population variance and abs-mean computed the plain way. */
function direct(v: Float32Array) {
  const a = Array.from(v);
  const mean = a.reduce((s, t) => s + t, 0) / a.length;
  return {
    min: Math.min(...a),
    max: Math.max(...a),
    mean,
    variance: a.reduce((s, t) => s + (t - mean) ** 2, 0) / a.length,
    absMean: a.reduce((s, t) => s + Math.abs(t), 0) / a.length,
  };
}

describe('getRawFeatures', () => {
  const { float, calibrated, fixed } = stagesOf(new TinyResNet(), 'bayes');

  it('gives every node of the float model the statistics of its captured output, float nodes without saturation', () => {
    const r = getRawFeatures(float, x);
    const captured = [...captureNodeValues(float, [x]).values()];
    expect(r.nodes.map((n) => n.name)).toEqual(captured.map((c) => c.name));
    for (const [i, n] of r.nodes.entries()) {
      const d = direct(captured[i]!.values);
      expect(n.min).toBe(d.min);
      expect(n.max).toBe(d.max);
      expect(n.mean).toBeCloseTo(d.mean, 10);
      expect(n.variance).toBeCloseTo(d.variance, 10);
      expect(n.absMean).toBeCloseTo(d.absMean, 10);
      expect(n.count).toBe(captured[i]!.values.length);
      expect(n.dtype).toBe('float32');
      expect(n.scale).toBeNull();
      expect(n.saturation).toBeNull();
      expect(n.histogram.counts).toHaveLength(64);
      expect(n.histogram.edges).toHaveLength(65);
      expect(n.histogram.edges[0]).toBe(d.min);
      expect(n.histogram.edges[64]).toBe(d.max);
      expect(n.histogram.counts.reduce((s, c) => s + c, 0)).toBe(n.count);
    }
    const conv2 = r.nodes.find((n) => n.name === 'conv2')!;
    expect(conv2.shape).toEqual([4, 16, 8, 8]);
    expect(conv2.type).toBe('Conv2d');
  });

  it('a prefix no node name starts with is an error naming the closest names', () => {
    expect(() => getRawFeatures(float, x, { prefixes: ['conv2', 'conv9'] })).toThrow(
      /^getRawFeatures: no node name starts with prefix 'conv9'; closest: conv0, conv1, conv2;/,
    );
  });

  it('histogram bins hold the values between their edges', () => {
    const r = getRawFeatures(float, x, { bins: 8, prefixes: ['conv2'] });
    expect(r.nodes.map((n) => n.name)).toEqual(['conv2']);
    const n = r.nodes[0]!;
    const values = [...captureNodeValues(float, [x]).values()].find((c) => c.name === 'conv2')!.values;
    const { edges, counts } = n.histogram;
    for (let b = 0; b < 8; b++) {
      const inBin = Array.from(values).filter((v) => v >= edges[b]! && (b === 7 ? v <= edges[8]! : v < edges[b + 1]!));
      expect(counts[b]).toBe(inBin.length);
    }
  });

  it('a fake-quant whose scale is shrunk clips most values, and the ratio equals a direct count', () => {
    const s = stagesOf(new TinyResNet(), 'bayes');
    const quant = subAt(s.calibrated, 'quant') as QatModule;
    (quant.activationPostProcess!.scale.values() as Float32Array).fill(1e-4);
    const r = getRawFeatures(s.calibrated, x);
    const n = r.nodes.find((m) => m.name === 'quant')!;
    expect(n.scale).toEqual([Math.fround(1e-4)]);
    expect(n.dtype).toBe('qint8');
    const bound = Math.fround(127 * Math.fround(1e-4));
    const input = Array.from(x.values());
    const expected = input.filter((v) => Math.abs(v) >= bound * (1 - 1e-6)).length / input.length;
    expect(n.saturation).toBeGreaterThan(0.5);
    expect(n.saturation).toBeCloseTo(expected, 2);
    expect(n.max).toBeCloseTo(bound, 6);
    expect(n.min).toBeCloseTo(-128 * 1e-4, 6);
  });

  it('calibrated nodes clip little on an input like the calibration data', () => {
    const r = getRawFeatures(calibrated, x);
    for (const n of r.nodes) {
      if (n.name === 'x' || n.name === 'dequant') expect(n.saturation).toBeNull();
      else if (n.saturation !== null) expect(n.saturation, n.name).toBeLessThan(0.02);
    }
    const relu0 = r.nodes.find((n) => n.name === 'relu0')!;
    expect(relu0.type).toBe('QAT(ConvAddReLU2d)');
    expect(relu0.scale).toHaveLength(1);
  });

  it('fixed point: dtype and scale of each QTensor, saturation counted on the integers', () => {
    const r = getRawFeatures(fixed, x, { types: ['FixedConv'] });
    expect(r.nodes.map((n) => n.name)).toEqual(['relu0', '_generated_add_0', 'conv2', 'fc']);
    const captured = [...captureNodeValues(fixed, [x]).values()];
    for (const n of r.nodes) {
      const c = captured.find((v) => v.name === n.name)!;
      const ints = Array.from(c.ints!);
      const q = c.quant!;
      expect(n.saturation).toBe(ints.filter((k) => k >= q.quantMax || k <= q.quantMin).length / ints.length);
    }
    const fc = r.nodes.find((n) => n.name === 'fc')!;
    expect(fc.dtype).toBe('qint32');
    expect(fc.scale).toHaveLength(4);
    expect(fc.axis).toBe(1);
    expect(fc.saturation).toBe(0);
    expect(r.nodes[0]!.dtype).toBe('qint8');
  });

  it('a value exactly at a limit is not saturated: only values clamping changed count (fake quant and fixed point)', () => {
    const model = new TinyResNet();
    model.setChild('quant', new QuantStub({ scale: 1 / 128 }));
    const stages = stagesOf(model, 'bayes');
    // half the pixels at -1 = -128/128 (representable, a background), the rest inside the range
    const v = Float32Array.from(x.values(), (t, i) => (i % 2 ? -1 : Math.min(Math.abs(t), 0.99)));
    const atLimit = tensor(v, [...x.shape]);
    for (const gm of [stages.calibrated, stages.fixed]) {
      const quant = getRawFeatures(gm, atLimit).nodes.find((n) => n.name === 'quant')!;
      expect(quant.min).toBe(-1);
      expect(quant.saturation).toBe(0);
    }
    // pixels in 0..255: every value above 127.5/128 is clamped to 127/128
    const raw = Float32Array.from({ length: v.length }, (_, i) => i % 256);
    const clamped = Array.from(raw).filter((p) => p > 127.5 / 128).length / raw.length;
    for (const gm of [stages.calibrated, stages.fixed]) {
      const quant = getRawFeatures(gm, tensor(raw, [...x.shape])).nodes.find((n) => n.name === 'quant')!;
      expect(quant.saturation).toBeCloseTo(clamped, 10);
    }
  });

  it('flags a tensor whose abs-max dwarfs its 99th percentile, not the quantized copy that clipped it', () => {
    const v = Float32Array.from(x.values());
    v[5] = 40;
    const spiked = tensor(v, [...x.shape]);
    const r = getRawFeatures(calibrated, spiked);
    const input = r.nodes.find((n) => n.name === 'x')!;
    expect(input.outlier.flagged).toBe(true);
    expect(input.outlier.absMax).toBe(40);
    expect(input.outlier.ratio).toBeGreaterThan(35);
    const quant = r.nodes.find((n) => n.name === 'quant')!;
    expect(quant.outlier.flagged).toBe(false);
    expect(quant.saturation).toBeGreaterThan(0);
    expect(getRawFeatures(calibrated, x).nodes.some((n) => n.outlier.flagged)).toBe(false);
  });

  it('outlier rule: ratio over the non-zero |v|, nothing flagged below 100 values', () => {
    const many = new Float32Array(1000);
    for (let i = 0; i < 1000; i++) many[i] = i % 2 ? 0 : 1;
    many[0] = 10;
    const o = outlierOf(many, 4);
    expect(o.p99).toBe(1);
    expect(o.ratio).toBe(10);
    expect(o.flagged).toBe(true);
    expect(outlierOf(many.subarray(0, 150), 4).flagged).toBe(false); // 75 non-zero values
    expect(outlierOf(new Float32Array(10), 4)).toEqual({ flagged: false, absMax: 0, p99: null, ratio: null });
  });

  it('per-channel statistics along the channel axis', () => {
    const r = getRawFeatures(calibrated, x, { perChannel: true, prefixes: ['relu0'] });
    const n = r.nodes[0]!;
    const values = [...captureNodeValues(calibrated, [x]).values()].find((c) => c.name === 'relu0')!.values;
    expect(n.channels).toHaveLength(8);
    const c3 = Array.from(values).filter((_, i) => Math.floor(i / 64) % 8 === 3);
    expect(n.channels![3]!.max).toBe(Math.max(...c3));
    expect(n.channels![3]!.mean).toBeCloseTo(c3.reduce((s, t) => s + t, 0) / c3.length, 10);
    expect(getRawFeatures(calibrated, x).nodes[0]!.channels).toBeNull();
  });

  it('counts NaN and Infinity apart and keeps them out of the statistics; the result is plain JSON', () => {
    const v = Float32Array.from(x.values());
    v[0] = Number.NaN;
    v[1] = Number.POSITIVE_INFINITY;
    const r = getRawFeatures(float, tensor(v, [...x.shape]), { prefixes: ['x'] });
    const n = r.nodes[0]!;
    expect(n.nonFinite).toBe(2);
    expect(n.count).toBe(v.length - 2);
    expect(Number.isFinite(n.mean)).toBe(true);
    expect(r.version).toBe(1);
    const full = getRawFeatures(fixed, x, { perChannel: true });
    expect(JSON.parse(JSON.stringify(full))).toEqual(full);
  });

  it('preserveInt: statistics on the integers of quantized nodes, real values for float ones', () => {
    const fixedInts = getRawFeatures(fixed, x, { preserveInt: true, prefixes: ['relu0', 'x'] });
    const real = getRawFeatures(fixed, x, { prefixes: ['relu0', 'x'] });
    const ints = Array.from([...captureNodeValues(fixed, [x]).values()].find((c) => c.name === 'relu0')!.ints!);
    const relu0 = fixedInts.nodes.find((n) => n.name === 'relu0')!;
    expect(relu0.max).toBe(Math.max(...ints));
    expect(relu0.min).toBe(0);
    expect(Number.isInteger(relu0.max)).toBe(true);
    expect(relu0.saturation).toBe(real.nodes.find((n) => n.name === 'relu0')!.saturation);
    expect(fixedInts.nodes.find((n) => n.name === 'x')!.max).toBe(real.nodes.find((n) => n.name === 'x')!.max);
    // a fake-quant output divided by its scale gives the same integers as the fixed-point model's quantized input
    const quantFake = getRawFeatures(calibrated, x, { preserveInt: true, prefixes: ['quant'] }).nodes[0]!;
    const quantFixed = getRawFeatures(fixed, x, { preserveInt: true, prefixes: ['quant'] }).nodes[0]!;
    expect(quantFake.histogram.counts).toEqual(quantFixed.histogram.counts);
    expect(quantFake.mean).toBeCloseTo(quantFixed.mean!, 12);
  });

  it('rejects a bad bin count or outlier ratio', () => {
    expect(() => getRawFeatures(float, x, { bins: 0 })).toThrow(InvalidArgumentError);
    expect(() => getRawFeatures(float, x, { outlierRatio: 0.5 })).toThrow(/outlierRatio/);
  });
});
