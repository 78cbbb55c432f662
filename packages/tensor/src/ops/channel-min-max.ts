import { kernels, registerKernel } from '../registry.js';
import { Tensor } from '../tensor.js';
import { make } from './util.js';

// ChannelMinMax: the smallest and largest non-NaN value per channel of a float32 array laid out
// [outer, channels, inner] (+Infinity and −Infinity for a channel with no value), as observers need it on
// every activation of every calibration batch. The cpu kernel is the reference; the wasm one
// (assembly/_min-max.ts) gives the same values (a zero's sign aside).

export interface ChannelMinMaxAttrs {
  outer: number;
  channels: number;
  inner: number;
}

registerKernel<(inputs: Tensor[], a: ChannelMinMaxAttrs) => Tensor>({
  op: 'ChannelMinMax',
  backend: 'cpu',
  fn: ([x], { outer, channels, inner }) => {
    const v = x!.values() as Float32Array;
    const out = new Float32Array(2 * channels);
    for (let c = 0; c < channels; c++) {
      out[2 * c] = Infinity;
      out[2 * c + 1] = -Infinity;
    }
    let p = 0;
    for (let o = 0; o < outer; o++) {
      for (let c = 0; c < channels; c++) {
        let lo = out[2 * c]!;
        let hi = out[2 * c + 1]!;
        for (const end = p + inner; p < end; p++) {
          const e = v[p]!;
          if (e < lo) lo = e;
          if (e > hi) hi = e;
        }
        out[2 * c] = lo;
        out[2 * c + 1] = hi;
      }
    }
    return make(out, [channels, 2]);
  },
});

/**
 * Per channel [min, max] of the non-NaN values of `values` ([outer, channels, inner]) into outMin / outMax,
 * on the fastest kernel that serves it.
 */
export function channelMinMax(
  values: Float32Array,
  layout: ChannelMinMaxAttrs,
  outMin: Float64Array,
  outMax: Float64Array,
): void {
  const x = new Tensor({ data: values, shape: [values.length], dtype: 'float32' });
  const r = kernels
    .resolve<(i: Tensor[], a: ChannelMinMaxAttrs) => Tensor>('ChannelMinMax', [x], layout)
    .fn([x], layout);
  const v = r.values();
  for (let c = 0; c < layout.channels; c++) {
    outMin[c] = v[2 * c]!;
    outMax[c] = v[2 * c + 1]!;
  }
}
