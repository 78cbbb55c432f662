import { moduleCodecs } from '@qtk/ir';
import { DTypeError, Generator, InvalidArgumentError, rand, tensor, yuvColorSpace, type YuvSwing } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { intRange, roundReal } from '../integer-math.js';
import { QTensor } from '../qtensor.js';
// through the package index, which registers the module codecs
import { centeredYuvInput, planYuvInput, YuvInputQuantize, type YuvInputPlanOptions } from '../index.js';

const IMAGENET = { mean: [0.485, 0.456, 0.406], std: [0.229, 0.224, 0.225] };

/** n random centered YUV pixels (all of −128..127), as an [1, 3, 1, n] qint8 QTensor. */
function randomYuv(n: number, seed: number): QTensor {
  const v = rand([3 * n], { low: -128, high: 128, generator: new Generator(seed) })
    .floor()
    .values();
  return QTensor.fromInts(v, [1, 3, 1, n], [1], 'qint8');
}

/** The real-number definition the integer plan approximates: YUV → RGB (clamped), normalize, quantize. */
function ideal(o: YuvInputPlanOptions, x: QTensor): number[] {
  const s = yuvColorSpace(o.swing);
  const n = x.shape[3]!;
  const v = x.ints();
  const mean = o.mean as number[];
  const std = o.std as number[];
  const sc = Math.fround(o.scale);
  const { min, max } = intRange(o.dtype);
  const out: number[] = new Array(3 * n);
  for (let p = 0; p < n; p++) {
    const byte = [0, 1, 2].map((j) => v[j * n + p]! + 128 - s.yuvOffset[j]!);
    for (let c = 0; c < 3; c++) {
      const color = o.order === 'bgr' ? 2 - c : c;
      let rgb =
        s.toRgb[3 * color]! * byte[0]! + s.toRgb[3 * color + 1]! * byte[1]! + s.toRgb[3 * color + 2]! * byte[2]!;
      rgb = Math.min(255, Math.max(0, rgb));
      const q = roundReal((rgb / 255 - mean[c]!) / std[c]! / sc, o.rounding);
      out[c * n + p] = Math.min(max, Math.max(min, q));
    }
  }
  return out;
}

const run = (m: YuvInputQuantize, x: QTensor) => Array.from(m.call(x).ints());

describe('YuvInputQuantize', () => {
  it('equals YUV → RGB → normalize → quantize in real arithmetic: qint8 identical, qint16 off by one on < 0.003%', () => {
    const x = randomYuv(100_000, 1);
    const cases: YuvInputPlanOptions[] = [];
    for (const swing of ['full', 'studio'] as YuvSwing[]) {
      cases.push({ swing, ...IMAGENET, scale: 1 / 128, dtype: 'qint8', rounding: 'half_up' });
      cases.push({ swing, mean: 0.5, std: 0.5, scale: 1 / 128, dtype: 'qint8', rounding: 'half_even', order: 'bgr' });
      cases.push({ swing, ...IMAGENET, scale: 1 / 8192, dtype: 'qint16', rounding: 'half_up' });
    }
    for (const o of cases) {
      const plan = planYuvInput(o);
      // 19+ fraction bits: the integer sum is within 192.5 · 2^-19 < 4e-4 steps of the real value
      expect(Math.min(...plan.shift)).toBeGreaterThanOrEqual(19);
      const got = run(new YuvInputQuantize(plan), x);
      const want = ideal({ ...o, mean: plan.mean, std: plan.std }, x);
      let off = 0;
      let worst = 0;
      for (let i = 0; i < got.length; i++) {
        const d = Math.abs(got[i]! - want[i]!);
        worst = Math.max(worst, d);
        if (d) off++;
      }
      // measured: qint8 identical on all 300k values; qint16 (19-21 fraction bits) 2 and 5 values off by one
      expect(worst).toBeLessThanOrEqual(1);
      expect(off / got.length).toBeLessThanOrEqual(o.dtype === 'qint8' ? 0 : 3e-5);
      expect(off / got.length).toBeLessThan(5e-4);
    }
  });

  it('gives the quantized black and white of each channel at the ends of the RGB range', () => {
    const plan = planYuvInput({ swing: 'full', ...IMAGENET, scale: 1 / 128, dtype: 'qint8', rounding: 'half_up' });
    // black (Y byte 0) and white (Y byte 255) with no colour
    const x = QTensor.fromInts([-128, 127, 0, 0, 0, 0], [1, 3, 1, 2], [1], 'qint8');
    const q = run(new YuvInputQuantize(plan), x);
    for (let c = 0; c < 3; c++) {
      expect(q[2 * c]).toBe(Math.max(-128, Math.round(-IMAGENET.mean[c]! / IMAGENET.std[c]! / (1 / 128))));
      expect(q[2 * c + 1]).toBe(Math.min(127, Math.round((1 - IMAGENET.mean[c]!) / IMAGENET.std[c]! / (1 / 128))));
      expect([plan.min[c], plan.max[c]]).toEqual([q[2 * c], q[2 * c + 1]]);
    }
  });

  it("order 'bgr' gives the 'rgb' plan's channels reversed", () => {
    const x = randomYuv(2000, 2);
    const base = { swing: 'studio' as const, scale: 1 / 128, dtype: 'qint8' as const, rounding: 'half_up' as const };
    const rgb = run(new YuvInputQuantize(planYuvInput({ ...base, ...IMAGENET })), x);
    const bgr = run(
      new YuvInputQuantize(
        planYuvInput({ ...base, mean: [...IMAGENET.mean].reverse(), std: [...IMAGENET.std].reverse(), order: 'bgr' }),
      ),
      x,
    );
    expect(bgr.slice(0, 2000)).toEqual(rgb.slice(4000));
    expect(bgr.slice(4000)).toEqual(rgb.slice(0, 2000));
  });

  it('round-trips through its codec and JSON with identical integers; a damaged config is refused', () => {
    const m = new YuvInputQuantize(
      planYuvInput({ swing: 'full', ...IMAGENET, scale: 1 / 8192, dtype: 'qint16', rounding: 'half_even' }),
    );
    const codec = moduleCodecs.forModule(m)!;
    const json = JSON.parse(JSON.stringify(codec.config(m)));
    const back = moduleCodecs.build('YuvInputQuantize', json) as YuvInputQuantize;
    const x = randomYuv(500, 3);
    expect(run(back, x)).toEqual(run(m, x));
    expect(back.call(x).tensorScale).toBe(Math.fround(1 / 8192));
    const bad = JSON.parse(JSON.stringify(json));
    bad.shift.values = [20, 20];
    expect(() => moduleCodecs.build('YuvInputQuantize', bad)).toThrow(/shift/);
    const empty = JSON.parse(JSON.stringify(json));
    empty.min.values = [100, 0, 0];
    empty.max.values = [-100, 0, 0];
    expect(() => moduleCodecs.build('YuvInputQuantize', empty)).toThrow(/empty or outside qint16/);
  });

  it('takes only centered YUV bytes as a qint8 QTensor of scale 1, NCHW with 3 channels', () => {
    const m = new YuvInputQuantize(
      planYuvInput({ swing: 'full', mean: 0.5, std: 0.5, scale: 1 / 128, dtype: 'qint8', rounding: 'half_up' }),
    );
    expect(() => m.call(tensor([0, 0, 0], [1, 3, 1, 1]) as unknown as QTensor)).toThrow(DTypeError);
    expect(() => m.call(QTensor.fromInts([0, 0, 0], [1, 3, 1, 1], [0.5], 'qint8'))).toThrow(
      /scale 1.*centeredYuvInput/,
    );
    expect(() => m.call(QTensor.fromInts([0, 0, 0, 0], [1, 4, 1, 1], [1], 'qint8'))).toThrow(/3 channels/);
    const yuv = centeredYuvInput(tensor([-128, 0, 127], [1, 3, 1, 1]));
    expect([yuv.dtype, yuv.tensorScale, ...Array.from(yuv.ints())]).toEqual(['qint8', 1, -128, 0, 127]);
    expect(() => centeredYuvInput(tensor([0.5, 0, 0], [1, 3, 1, 1]))).toThrow(/integers in -128..127/);
    expect(() => centeredYuvInput(tensor([128, 0, 0], [1, 3, 1, 1]))).toThrow(/integers in -128..127/);
  });

  it('refuses options it cannot plan, naming them', () => {
    const o = {
      swing: 'full' as const,
      mean: 0.5,
      std: 0.5,
      scale: 1 / 128,
      dtype: 'qint8' as const,
      rounding: 'half_up' as const,
    };
    expect(() => planYuvInput({ ...o, std: [0.5, 0, 0.5] })).toThrow(/std must be positive/);
    expect(() => planYuvInput({ ...o, mean: [0.5, 0.5] })).toThrow(InvalidArgumentError);
    expect(() => planYuvInput({ ...o, scale: 1e-9 })).toThrow(/too many for int32 weights/);
  });
});
