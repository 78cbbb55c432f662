import { describe, expect, it } from 'vitest';
import { geometry3 } from './int-conv-f64.js';

const batch = { n: 1, cin: 1, groups: 1 };

describe('geometry3', () => {
  it('lifts a 1-d convolution to 3-d with unit leading sizes and the begin pad only', () => {
    expect(
      geometry3({ ...batch, image: [10], kernel: [3], out: [5], stride: [2], pads: [1, 1], dilation: [1] }),
    ).toEqual({
      id: 1,
      ih: 1,
      iw: 10,
      kd: 1,
      kh: 1,
      kw: 3,
      od: 1,
      oh: 1,
      ow: 5,
      sd: 1,
      sh: 1,
      sw: 2,
      pd: 0,
      ph: 0,
      pw: 1,
      dd: 1,
      dh: 1,
      dw: 1,
    });
  });

  it('keeps a 2-d convolution, padding the depth axis with zero', () => {
    const g = geometry3({
      ...batch,
      image: [6, 7],
      kernel: [3, 2],
      out: [4, 3],
      stride: [1, 2],
      pads: [2, 0, 1, 1],
      dilation: [2, 1],
    });
    expect([g.id, g.ih, g.iw, g.kh, g.kw, g.oh, g.ow]).toEqual([1, 6, 7, 3, 2, 4, 3]);
    expect([g.sd, g.sh, g.sw, g.pd, g.ph, g.pw, g.dd, g.dh, g.dw]).toEqual([1, 1, 2, 0, 2, 0, 1, 2, 1]);
  });
});
