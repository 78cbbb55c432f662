// Synthetic printed-text images for the OCR models: lines of glyph-like dark strokes on a light page, normalised
// as the model's preprocessing does. Uniform noise is no text, so a detector's probability map stays near zero and
// an SQNR measured on it says nothing; on these pages the detector finds text and the recogniser is confident.
import { Generator, rand } from '@qtk/tensor';

export interface TextImageOptions {
  /** Per channel, applied to pixel values in [0, 1]: (pixel - mean) / std. */
  readonly mean: readonly number[];
  readonly std: readonly number[];
  readonly seed: number;
}

const PAPER = 0.95;
const INK = 0.1;
const LINE_PITCH = 24;

/** [count, C, H, W] text images, as float32 values in NCHW order. */
export function textImages(count: number, shape: readonly number[], o: TextImageOptions): Float32Array {
  const [, channels, height, width] = shape as [number, number, number, number];
  const plane = height * width;
  const out = new Float32Array(count * channels * plane);
  // uniform [0, 1) numbers, seeded: enough for every stroke of every image
  const random = rand([count * 4096], { generator: new Generator(o.seed) }).values() as Float32Array;
  let next = 0;
  const draw = () => random[next++ % random.length]!;
  for (let n = 0; n < count; n++) {
    const ink = new Uint8Array(plane);
    const lines = Math.max(1, Math.floor(height / LINE_PITCH));
    for (let line = 0; line < lines; line++) {
      const top = Math.min(height - 1, 4 + line * LINE_PITCH + Math.floor(draw() * 6));
      const glyphHeight = Math.min(height - top, 10 + Math.floor(draw() * 6));
      let left = 4 + Math.floor(draw() * 10);
      while (left < width - 12) {
        const glyphWidth = 6 + Math.floor(draw() * 6);
        for (let stroke = 0; stroke < 3; stroke++) {
          const vertical = draw() < 0.5;
          const x0 = left + Math.floor(draw() * glyphWidth);
          const y0 = top + Math.floor(draw() * glyphHeight);
          const length = vertical ? glyphHeight : glyphWidth;
          for (let t = 0; t < length; t++)
            for (let d = 0; d < 2; d++) {
              const y = vertical ? top + t : y0 + d;
              const x = vertical ? x0 + d : left + t;
              if (y < height && x < width) ink[y * width + x] = 1;
            }
        }
        left += glyphWidth + 2 + Math.floor(draw() * 4);
      }
    }
    for (let c = 0; c < channels; c++) {
      const mean = o.mean[c] ?? o.mean[0]!;
      const std = o.std[c] ?? o.std[0]!;
      const base = (n * channels + c) * plane;
      for (let i = 0; i < plane; i++) out[base + i] = ((ink[i] ? INK : PAPER) - mean) / std;
    }
  }
  return out;
}
