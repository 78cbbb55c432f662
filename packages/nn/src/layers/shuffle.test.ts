import { arange, reshape } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { ChannelShuffle, PixelShuffle, PixelUnshuffle } from '../index.js';

const input = (shape: number[]) =>
  reshape(
    arange(
      0,
      shape.reduce((a, b) => a * b, 1),
    ),
    shape,
  );

describe('shuffles', () => {
  it('PixelShuffle: out[n, c, h·r + i, w·r + j] = in[n, c·r² + i·r + j, h, w]', () => {
    const [N, C, H, W, r] = [2, 2, 3, 2, 2];
    const x = input([N, C * r * r, H, W]);
    const y = new PixelShuffle(r).call(x);
    expect(y.shape).toEqual([N, C, H * r, W * r]);
    const xv = x.values();
    const yv = y.values();
    for (let n = 0; n < N; n++)
      for (let c = 0; c < C; c++)
        for (let h = 0; h < H; h++)
          for (let w = 0; w < W; w++)
            for (let i = 0; i < r; i++)
              for (let j = 0; j < r; j++) {
                const src = ((n * C * r * r + c * r * r + i * r + j) * H + h) * W + w;
                const dst = ((n * C + c) * H * r + h * r + i) * W * r + w * r + j;
                expect(yv[dst]).toBe(xv[src]);
              }
  });

  it('PixelUnshuffle inverts PixelShuffle', () => {
    const x = input([1, 3, 4, 6]);
    const y = new PixelUnshuffle(2).call(x);
    expect(y.shape).toEqual([1, 12, 2, 3]);
    expect(Array.from(new PixelShuffle(2).call(y).values())).toEqual(Array.from(x.values()));
  });

  it('ChannelShuffle: out channel k·g + gi = in channel gi·K + k', () => {
    const x = input([1, 6, 1, 2]);
    const y = new ChannelShuffle(2).call(x).values();
    // channels 0..5 hold [2c, 2c+1]; groups of 3: order 0, 3, 1, 4, 2, 5
    expect(Array.from(y)).toEqual([0, 1, 6, 7, 2, 3, 8, 9, 4, 5, 10, 11]);
  });

  it('rejects factors and shapes that do not divide', () => {
    expect(() => new PixelShuffle(0)).toThrow(/positive integer/);
    expect(() => new PixelShuffle(2).call(input([1, 3, 2, 2]))).toThrow(/divisible/);
    expect(() => new ChannelShuffle(4).call(input([1, 6, 1, 1]))).toThrow(/divisible/);
  });
});
