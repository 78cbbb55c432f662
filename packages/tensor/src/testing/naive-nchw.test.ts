import { describe, expect, it } from 'vitest';
import { arange } from '../index.js';
import { naiveNchw } from './naive-nchw.js';

describe('naiveNchw', () => {
  it('walks [N, C, oh, ow] row-major and hands the pixel the input size', () => {
    const x = arange(24).reshape([2, 3, 2, 2]);
    const seen = naiveNchw(x, 1, 2, (n, c, i, j) => 1000 * n + 100 * c + 10 * i + j);
    expect(seen).toEqual([0, 1, 100, 101, 200, 201, 1000, 1001, 1100, 1101, 1200, 1201]);
    expect(naiveNchw(x, 1, 1, (n, c, _i, _j, H, W) => x.at(n, c, H - 1, W - 1))).toEqual([3, 7, 11, 15, 19, 23]);
  });
});
