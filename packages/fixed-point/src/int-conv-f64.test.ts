import { describe, expect, it } from 'vitest';
import { geometry3 } from './int-conv-f64.js';

describe('geometry3', () => {
  it('lifts a 1-d convolution to 3-d with unit leading sizes and the begin pad only', () => {
    expect(geometry3([10], [3], [5], [2], [1, 1], [1])).toEqual({
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
    const g = geometry3([6, 7], [3, 2], [4, 3], [1, 2], [2, 0, 1, 1], [2, 1]);
    expect([g.id, g.ih, g.iw, g.kh, g.kw, g.oh, g.ow]).toEqual([1, 6, 7, 3, 2, 4, 3]);
    expect([g.sd, g.sh, g.sw, g.pd, g.ph, g.pw, g.dd, g.dh, g.dw]).toEqual([1, 1, 2, 0, 2, 0, 1, 2, 1]);
  });
});
