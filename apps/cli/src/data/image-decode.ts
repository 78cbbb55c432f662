import jpeg from 'jpeg-js';
import { PNG } from 'pngjs';
import { CliError } from '../io.js';

/** A decoded image: 8-bit RGBA pixels, row-major. */
export interface RgbaImage {
  readonly width: number;
  readonly height: number;
  readonly data: Uint8Array;
}

const PNG_MAGIC = [0x89, 0x50, 0x4e, 0x47];
const JPEG_MAGIC = [0xff, 0xd8, 0xff];

export function imageFormat(bytes: Uint8Array): 'png' | 'jpeg' | null {
  const is = (m: number[]) => m.every((b, i) => bytes[i] === b);
  return is(PNG_MAGIC) ? 'png' : is(JPEG_MAGIC) ? 'jpeg' : null;
}

/** The most pixels a sample image may have (8192 × 8192): decoding needs 4 bytes a pixel before any resize. */
export const MAX_IMAGE_PIXELS = 2 ** 26;

/** Decodes a PNG or JPEG file's bytes (format from the magic bytes) into RGBA. */
export function decodeImage(bytes: Uint8Array, path: string): RgbaImage {
  const format = imageFormat(bytes);
  if (format === 'png' && bytes.length >= 24) {
    // IHDR comes first: the size is known before pngjs allocates width × height × 4 bytes
    const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    checkPixels(dv.getUint32(16, false), dv.getUint32(20, false), path);
  }
  try {
    if (format === 'png') {
      const png = PNG.sync.read(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
      return {
        width: png.width,
        height: png.height,
        data: new Uint8Array(png.data.buffer, png.data.byteOffset, png.data.byteLength),
      };
    }
    if (format === 'jpeg') {
      const img = jpeg.decode(bytes, {
        useTArray: true,
        formatAsRGBA: true,
        maxResolutionInMP: MAX_IMAGE_PIXELS / 1e6,
      });
      return { width: img.width, height: img.height, data: img.data };
    }
  } catch (e) {
    if (e instanceof CliError) throw e;
    throw new CliError(`${path}: cannot decode the ${format?.toUpperCase()} image (${(e as Error).message})`, {
      cause: e,
    });
  }
  throw new CliError(`${path}: not a PNG or JPEG image (unknown magic bytes)`);
}

function checkPixels(width: number, height: number, path: string): void {
  if (width * height > MAX_IMAGE_PIXELS) {
    throw new CliError(
      `${path}: the image is ${width}×${height} pixels, more than the ${MAX_IMAGE_PIXELS} (8192×8192) qtk decodes; resize it first`,
    );
  }
}

export interface ImageToTensorOptions {
  /** Channels of the model's input: 1 (greyscale, ITU-R 601 luma of RGB) or 3 (RGB). */
  channels: number;
  width: number;
  height: number;
  /** Per channel (or one value for all), applied as (pixel/255 − mean)/std. */
  mean: readonly number[];
  std: readonly number[];
}

/**
 * One image as CHW float32: converted to the model's channels, resized with bilinear
 * interpolation (half-pixel centres, like PyTorch's align_corners=False), then normalised.
 */
export function imageToChw(img: RgbaImage, o: ImageToTensorOptions, path: string): Float32Array {
  if (o.channels !== 1 && o.channels !== 3) {
    throw new CliError(`${path}: images can feed models with 1 or 3 input channels; this model takes ${o.channels}`);
  }
  const { width: w0, height: h0, data } = img;
  const src: Float32Array[] = [];
  for (let c = 0; c < o.channels; c++) src.push(new Float32Array(w0 * h0));
  for (let i = 0; i < w0 * h0; i++) {
    const r = data[4 * i]!;
    const g = data[4 * i + 1]!;
    const b = data[4 * i + 2]!;
    if (o.channels === 1) src[0]![i] = r === g && g === b ? r : 0.299 * r + 0.587 * g + 0.114 * b;
    else {
      src[0]![i] = r;
      src[1]![i] = g;
      src[2]![i] = b;
    }
  }
  const out = new Float32Array(o.channels * o.width * o.height);
  const plane = o.width * o.height;
  for (let c = 0; c < o.channels; c++) {
    const mean = o.mean.length === 1 ? o.mean[0]! : o.mean[c]!;
    const std = o.std.length === 1 ? o.std[0]! : o.std[c]!;
    const resized = resizeBilinear(src[c]!, w0, h0, o.width, o.height);
    for (let i = 0; i < plane; i++) out[c * plane + i] = (resized[i]! / 255 - mean) / std;
  }
  return out;
}

/** Bilinear resize of one plane (identity when the size is unchanged). */
export function resizeBilinear(src: Float32Array, w0: number, h0: number, w: number, h: number): Float32Array {
  if (w === w0 && h === h0) return src;
  const out = new Float32Array(w * h);
  const sx = w0 / w;
  const sy = h0 / h;
  for (let y = 0; y < h; y++) {
    const fy = Math.min(Math.max((y + 0.5) * sy - 0.5, 0), h0 - 1);
    const y0 = Math.floor(fy);
    const y1 = Math.min(y0 + 1, h0 - 1);
    const ty = fy - y0;
    for (let x = 0; x < w; x++) {
      const fx = Math.min(Math.max((x + 0.5) * sx - 0.5, 0), w0 - 1);
      const x0 = Math.floor(fx);
      const x1 = Math.min(x0 + 1, w0 - 1);
      const tx = fx - x0;
      const top = src[y0 * w0 + x0]! * (1 - tx) + src[y0 * w0 + x1]! * tx;
      const bottom = src[y1 * w0 + x0]! * (1 - tx) + src[y1 * w0 + x1]! * tx;
      out[y * w + x] = top * (1 - ty) + bottom * ty;
    }
  }
  return out;
}
