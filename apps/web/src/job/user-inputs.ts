// A user's own samples for a job: decoded images (RGBA, from the page) or .npy tensors, converted to the
// model's sample shape [C, H, W]: channels to greyscale or RGB, resized (bilinear), normalised as
// (pixel / 255 - mean) / std per channel.
import { parseNpy } from '@qtk/nn';
import { Tensor } from '@qtk/tensor';
import { JobError } from './quantize-job.js';

/** An image decoded by the page: 8-bit RGBA, row-major. */
export interface RgbaImage {
  readonly name: string;
  readonly width: number;
  readonly height: number;
  readonly data: Uint8Array | Uint8ClampedArray;
}

/** A calibration or test file as the page read it. */
export type SampleFile =
  | { readonly kind: 'image'; readonly image: RgbaImage }
  | { readonly kind: 'npy'; readonly name: string; readonly bytes: Uint8Array };

export interface Normalisation {
  /** Per channel, or one value for all. */
  readonly mean: readonly number[];
  readonly std: readonly number[];
}

/** Bilinear sample of channel `c` of `img` at the centre-aligned position of output pixel (x, y). */
function sample(img: RgbaImage, c: number, x: number, y: number, w: number, h: number): number {
  const sx = Math.min(Math.max((x + 0.5) * (img.width / w) - 0.5, 0), img.width - 1);
  const sy = Math.min(Math.max((y + 0.5) * (img.height / h) - 0.5, 0), img.height - 1);
  const x0 = Math.floor(sx);
  const y0 = Math.floor(sy);
  const x1 = Math.min(x0 + 1, img.width - 1);
  const y1 = Math.min(y0 + 1, img.height - 1);
  const fx = sx - x0;
  const fy = sy - y0;
  const at = (xx: number, yy: number) => img.data[(yy * img.width + xx) * 4 + c]!;
  const top = at(x0, y0) * (1 - fx) + at(x1, y0) * fx;
  const bottom = at(x0, y1) * (1 - fx) + at(x1, y1) * fx;
  return top * (1 - fy) + bottom * fy;
}

function imageSample(
  img: RgbaImage,
  shape: readonly number[],
  norm: Normalisation,
  out: Float32Array,
  at: number,
): void {
  const [channels, h, w] = shape as [number, number, number];
  for (let c = 0; c < channels; c++) {
    const mean = norm.mean[c] ?? norm.mean[0]!;
    const std = norm.std[c] ?? norm.std[0]!;
    for (let y = 0; y < h; y++) {
      for (let x = 0; x < w; x++) {
        // greyscale from RGB with the ITU-R BT.601 weights
        const v =
          channels === 1
            ? 0.299 * sample(img, 0, x, y, w, h) +
              0.587 * sample(img, 1, x, y, w, h) +
              0.114 * sample(img, 2, x, y, w, h)
            : sample(img, c, x, y, w, h);
        out[at + (c * h + y) * w + x] = (v / 255 - mean) / std;
      }
    }
  }
}

/** Every file's samples stacked into one [N, ...sampleShape] tensor. */
export function samplesFromFiles(
  files: readonly SampleFile[],
  sampleShape: readonly number[],
  norm: Normalisation,
): Tensor {
  const per = sampleShape.reduce((a, b) => a * b, 1);
  const chunks: Float32Array[] = [];
  for (const f of files) {
    if (f.kind === 'image') {
      if (sampleShape.length !== 3 || (sampleShape[0] !== 1 && sampleShape[0] !== 3)) {
        throw new JobError(
          `${f.image.name}: the model takes samples of shape [${sampleShape.join(', ')}], not images (use .npy files)`,
        );
      }
      const out = new Float32Array(per);
      imageSample(f.image, sampleShape, norm, out, 0);
      chunks.push(out);
      continue;
    }
    const a = parseNpy(f.bytes, f.name);
    const dims = a.shape.length === sampleShape.length ? [1, ...a.shape] : a.shape;
    if (dims.length !== sampleShape.length + 1 || dims.slice(1).some((d, i) => d !== sampleShape[i])) {
      throw new JobError(
        `${f.name}: holds shape [${a.shape.join(', ')}]; the model takes samples of shape [${sampleShape.join(', ')}] (or a batch of them)`,
      );
    }
    chunks.push(Float32Array.from(a.data as ArrayLike<number>));
  }
  const n = chunks.reduce((s, c) => s + c.length / per, 0);
  if (n === 0) throw new JobError('no calibration samples: add PNG, JPEG or .npy files');
  const data = new Float32Array(n * per);
  let at = 0;
  for (const c of chunks) {
    data.set(c, at);
    at += c.length;
  }
  for (let i = 0; i < data.length; i++) {
    if (!Number.isFinite(data[i])) throw new JobError(`sample ${Math.floor(i / per)} holds NaN or ±Infinity`);
  }
  return new Tensor({ data, shape: [n, ...sampleShape], dtype: 'float32' });
}

/** Labels from a labels.txt: one integer class per line, for the samples in file-name order. */
export function parseLabels(text: string, count: number): Int32Array {
  const lines = text
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l !== '');
  if (lines.length < count) throw new JobError(`labels.txt has ${lines.length} labels for ${count} samples`);
  const out = new Int32Array(count);
  for (let i = 0; i < count; i++) {
    const v = Number(lines[i]);
    if (!Number.isInteger(v) || v < 0)
      throw new JobError(`labels.txt line ${i + 1}: '${lines[i]}' is not a class index`);
    out[i] = v;
  }
  return out;
}
