import { describe, expect, it } from 'vitest';
import { channelMinMax, Generator, Tensor } from '../index.js';
import type { ChannelMinMaxAttrs } from '../ops/channel-min-max.js';
import { kernels } from '../registry.js';

type Kernel = (inputs: Tensor[], a: ChannelMinMaxAttrs) => Tensor;
const onWasm = kernels.kernelOn<Kernel>('ChannelMinMax', 'wasm')!;
const onCpu = kernels.kernelOn<Kernel>('ChannelMinMax', 'cpu')!;

/** Equal values (a zero's sign aside: ±0 compare equal). */
const same = (a: ArrayLike<number>, b: ArrayLike<number>): boolean =>
  a.length === b.length && Array.from(a).every((v, i) => v === b[i] || (Number.isNaN(v) && Number.isNaN(b[i]!)));

describe('ChannelMinMax: wasm against the cpu reference', () => {
  it('per tensor and per channel, NaN ignored, ±Infinity kept, all-NaN channels give [+∞, −∞], odd lengths', () => {
    const gen = new Generator(13);
    const u = (n: number): number => gen.nextUint32() % n;
    for (let t = 0; t < 30; t++) {
      const outer = 1 + u(5);
      const channels = 1 + u(9);
      const inner = 1 + u(3000);
      const n = outer * channels * inner;
      if (n < 4096) continue;
      const v = Float32Array.from({ length: n }, () => (gen.nextUint32() / 2 ** 32 - 0.5) * 100);
      for (let k = 0; k < 20; k++) v[u(n)] = [Number.NaN, Infinity, -Infinity, 0, -0][k % 5]!;
      if (t % 4 === 0) v.fill(Number.NaN, 0, inner); // channel 0 of the first block: only NaN
      const x = new Tensor({ data: v, shape: [n], dtype: 'float32' });
      const a = { outer, channels, inner };
      expect(onWasm.accepts!([x], a)).toBe(true);
      const w = onWasm.fn([x], a).values();
      const c = onCpu.fn([x], a).values();
      expect(same(w, c)).toBe(true);
    }
  });

  it('channelMinMax fills the caller’s arrays: the values of a known array, and a channel with no value', () => {
    const v = new Float32Array(8192).fill(Number.NaN);
    for (let i = 0; i < 4096; i++) v[i] = (i % 100) - 37.5;
    const min = new Float64Array(2);
    const max = new Float64Array(2);
    channelMinMax(v, { outer: 1, channels: 2, inner: 4096 }, min, max);
    expect([min[0], max[0], min[1], max[1]]).toEqual([-37.5, 61.5, Infinity, -Infinity]);
  });
});
