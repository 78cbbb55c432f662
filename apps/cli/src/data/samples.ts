import { existsSync, lstatSync, readdirSync, readFileSync, type Stats, statSync } from 'node:fs';
import { basename, extname, join } from 'node:path';
import { parseNpy, rawToTensor } from '@qtk/nn';
import { Tensor } from '@qtk/tensor';
import { shownPath } from '../display-path.js';
import { CliError } from '../io.js';
import { decodeImage, imageToChw } from './image-decode.js';

export const SAMPLE_EXTENSIONS = ['.npy', '.png', '.jpg', '.jpeg'] as const;

/** Image preprocessing: resize target (width × height) and normalisation (pixel/255 − mean)/std. */
export interface Preprocess {
  readonly mean: readonly number[];
  readonly std: readonly number[];
  /** [width, height]; default the model's input size. */
  readonly size?: readonly [number, number];
}

/** A folder's samples stacked along a new batch axis. */
export interface Samples {
  /** [N, ...sampleShape] float32. */
  readonly tensor: Tensor;
  /** The files read, in order. */
  readonly files: readonly string[];
  /**
   * A name for each sample kept, after its file: the file name without its extension, and for a .npy holding a
   * batch of k samples, that name with the row ('cat-0' ... 'cat-{k-1}').
   */
  readonly names: readonly string[];
  /** Samples left out for holding non-finite values (NonFiniteOptions.skip). */
  readonly skipped: number;
}

/** A directory's sample files (.npy, .png, .jpg, .jpeg), sorted by file name (code-point order). */
export function listSampleFiles(dir: string, what: string): string[] {
  if (!existsSync(dir)) throw new CliError(`${what} directory ${shownPath(dir)} does not exist`);
  if (!statSync(dir).isDirectory()) throw new CliError(`${what} ${shownPath(dir)} is not a directory`);
  const files = readdirSync(dir)
    .filter((f) => (SAMPLE_EXTENSIONS as readonly string[]).includes(extname(f).toLowerCase()))
    .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  if (files.length === 0)
    throw new CliError(`${what} directory ${shownPath(dir)} holds no .npy, .png or .jpg/.jpeg files`);
  const paths = files.map((f) => join(dir, f));
  for (const p of paths) requireRegularFile(p, `${what} sample`);
  return paths;
}

/** A clear error unless `path` is (a symbolic link to) a regular file: not a directory, device or broken link. */
export function requireRegularFile(path: string, what: string): void {
  let st: Stats;
  try {
    st = statSync(path);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    let link = false;
    try {
      link = lstatSync(path).isSymbolicLink();
    } catch {
      // neither the link nor its target exists
    }
    if (link)
      throw new CliError(
        `${what} ${shownPath(path)} is a broken symbolic link (its target does not exist); remove it or point it at a file`,
        { cause: e },
      );
    if (code === 'ENOENT') throw new CliError(`${what} ${shownPath(path)} does not exist`, { cause: e });
    throw new CliError(`${what} ${shownPath(path)} cannot be read (${code ?? (e as Error).message})`, { cause: e });
  }
  if (st.isDirectory()) throw new CliError(`${what} ${shownPath(path)} is a directory, not a file`);
  if (!st.isFile())
    throw new CliError(`${what} ${shownPath(path)} is not a regular file (a device, FIFO or socket); give a file`);
}

/** The bytes of a checked sample or labels file; a read error names the file. */
export function readChecked(path: string, what: string): Buffer {
  requireRegularFile(path, what);
  try {
    return readFileSync(path);
  } catch (e) {
    throw new CliError(
      `${what} ${shownPath(path)} cannot be read (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`,
      { cause: e },
    );
  }
}

const fmt = (s: readonly (number | null)[]) => `[${s.map((d) => d ?? '?').join(', ')}]`;

function matches(shape: readonly number[], want: readonly (number | null)[]): boolean {
  return shape.length === want.length && want.every((d, i) => d === null || d === shape[i]);
}

/** What loadSamples does with a sample holding NaN or ±Infinity. */
export interface NonFiniteOptions {
  /** Leave such samples out (counted in `skipped`) instead of failing. */
  readonly skip?: boolean;
  /** Appended to the error, e.g. the option that skips them. */
  readonly hint?: string;
}

/**
 * Reads sample files into one tensor of shape [N, ...sampleShape] (sampleShape: the model's input
 * shape without the batch axis; null for a free dimension). A .npy holds one sample
 * (sampleShape) or a batch ([k, ...sampleShape]); an image becomes one sample of the model's
 * channels, resized and normalised. Every sample must have the same shape. A sample with a NaN or
 * ±Infinity is an error naming the file, unless `nonFinite.skip` leaves it out.
 */
export function loadSamples(
  files: readonly string[],
  sampleShape: readonly (number | null)[],
  pre: Preprocess,
  limit = Infinity,
  nonFinite: NonFiniteOptions = {},
): Samples {
  const chunks: Float32Array[] = [];
  let shape: number[] | null = null;
  let count = 0;
  let skipped = 0;
  const used: string[] = [];
  const names: string[] = [];
  for (const file of files) {
    if (count >= limit) break;
    const {
      data,
      shape: s,
      n,
    } = extname(file).toLowerCase() === '.npy'
      ? readNpySample(file, sampleShape)
      : readImageSample(file, sampleShape, pre);
    if (shape && !matches(s, shape)) {
      throw new CliError(
        `wrong input shape: ${file} holds samples of shape ${fmt(s)}, earlier files ${fmt(shape)}; every sample must have the same shape`,
      );
    }
    shape ??= s;
    const per = data.length / n;
    for (let i = 0; i < n && count < limit; i++) {
      const sample = data.subarray(i * per, (i + 1) * per);
      const bad = countNonFinite(sample);
      if (bad > 0) {
        if (nonFinite.skip) {
          skipped++;
          continue;
        }
        const where = n > 1 ? `sample ${i} (row ${i} of axis 0)` : 'its sample';
        throw new CliError(
          `${file}: ${where} holds ${bad} non-finite value(s) (NaN or ±Infinity) of ${per}; fix the data${nonFinite.hint ? ` ${nonFinite.hint}` : ''}`,
        );
      }
      chunks.push(sample);
      names.push(n > 1 ? `${sampleStem(file)}-${i}` : sampleStem(file));
      count++;
    }
    used.push(file);
  }
  if (count === 0) {
    throw new CliError(`no sample is left: all ${skipped} sample(s) read hold non-finite values (NaN or ±Infinity)`);
  }
  const per = shape!.reduce((p, d) => p * d, 1);
  const all = new Float32Array(count * per);
  let o = 0;
  for (const c of chunks) {
    all.set(c, o);
    o += c.length;
  }
  return {
    tensor: new Tensor({ data: all, shape: [count, ...shape!], dtype: 'float32' }),
    files: used,
    names,
    skipped,
  };
}

function sampleStem(file: string): string {
  return basename(file, extname(file));
}

function countNonFinite(v: Float32Array): number {
  let bad = 0;
  for (let i = 0; i < v.length; i++) if (!Number.isFinite(v[i]!)) bad++;
  return bad;
}

function readNpySample(
  file: string,
  sampleShape: readonly (number | null)[],
): { data: Float32Array; shape: number[]; n: number } {
  const a = parseNpy(readChecked(file, 'sample'), file);
  if (a.dtype === 'bool') throw new CliError(`${file}: a bool array cannot be a model input`);
  if (a.shape.includes(0))
    throw new CliError(
      `${file} holds no samples: its array of shape ${fmt(a.shape)} is empty; remove the file or save data in it`,
    );
  const t = rawToTensor(a, 'float32');
  const data = t.values() as Float32Array;
  if (matches(a.shape, sampleShape)) return { data, shape: a.shape, n: 1 };
  if (a.shape.length === sampleShape.length + 1 && matches(a.shape.slice(1), sampleShape))
    return { data, shape: a.shape.slice(1), n: a.shape[0]! };
  const hint = layoutHint(a.shape, sampleShape);
  throw new CliError(
    `wrong input shape: ${file} has shape ${fmt(a.shape)}, but the model takes samples of shape ${fmt(sampleShape)} ` +
      `(a .npy holds one sample ${fmt(sampleShape)} or a batch ${fmt([null, ...sampleShape])}); ` +
      (hint ?? 'check the file or pass --input-shape'),
  );
}

/**
 * What to do with an array that holds the model's samples in another layout: without the channel axis
 * ([28, 28] or a batch [k, 28, 28] for [1, 28, 28]) or with channels last ([28, 28, 3] for [3, 28, 28]).
 */
function layoutHint(shape: readonly number[], sampleShape: readonly (number | null)[]): string | null {
  const [channels, ...spatial] = sampleShape;
  if (channels === 1 && spatial.length > 0) {
    if (matches(shape, spatial))
      return `it looks like one sample without the channel axis: save it as ${fmt([1, ...shape])} (numpy: x[None])`;
    if (shape.length === spatial.length + 1 && matches(shape.slice(1), spatial))
      return `it looks like a batch of ${shape[0]} samples without the channel axis: save it as ${fmt([shape[0]!, 1, ...shape.slice(1)])} (numpy: x[:, None])`;
  }
  if (channels !== null && channels !== undefined && spatial.length === 2) {
    const last = shape.length === 3 ? shape : shape.length === 4 ? shape.slice(1) : null;
    if (last && last[2] === channels && matches(last.slice(0, 2), spatial))
      return `it looks like channels-last data (H, W, C): move the channel axis first (numpy: ${shape.length === 3 ? 'x.transpose(2, 0, 1)' : 'x.transpose(0, 3, 1, 2)'})`;
  }
  return null;
}

function readImageSample(
  file: string,
  sampleShape: readonly (number | null)[],
  pre: Preprocess,
): { data: Float32Array; shape: number[]; n: number } {
  if (sampleShape.length !== 3) {
    throw new CliError(
      `${file}: images feed models whose input is [N, C, H, W]; this model takes ${fmt([null, ...sampleShape])}`,
    );
  }
  const [c, h, w] = sampleShape as readonly [number | null, number | null, number | null];
  if (c === null) throw new CliError(`${file}: the model's channel count is not fixed; pass --input-shape N,C,H,W`);
  const [width, height] = pre.size ?? [w, h];
  if (pre.size && ((w !== null && w !== width) || (h !== null && h !== height))) {
    throw new CliError(
      `wrong input shape: --size ${width}x${height}, but the model takes ${fmt([null, ...sampleShape])} images (W×H ${w ?? '?'}x${h ?? '?'})`,
    );
  }
  if (width === null || height === null)
    throw new CliError(`${file}: the model's image size is not fixed; pass --size WxH`);
  for (const [name, v] of [
    ['mean', pre.mean],
    ['std', pre.std],
  ] as const) {
    if (v.length !== 1 && v.length !== c)
      throw new CliError(`--${name} has ${v.length} values; give 1 or one per channel (${c})`);
  }
  const img = decodeImage(readChecked(file, 'sample'), file);
  const data = imageToChw(img, { channels: c, width: width!, height: height!, mean: pre.mean, std: pre.std }, file);
  return { data, shape: [c, height!, width!], n: 1 };
}

/** A line of a text file for a message: at most 40 characters, control and non-ASCII characters escaped. */
function quoted(line: string): string {
  const short = line.length > 40 ? `${line.slice(0, 40)}...` : line;
  return `'${short.replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)}'`;
}

/**
 * The labels of a labels file: one integer class per line, blank lines ignored, in the order of the
 * samples (sorted file names; rows of a batched .npy in order). A label past the int32 range is
 * stored as 2^31 − 1, a class no model has, never wrapped round into a valid one; readLabelValues
 * gives the numbers as written.
 */
export function readLabels(file: string, count: number): Int32Array {
  return labelsToInt32(readLabelValues(file, count));
}

/** Labels as int32, those past its range capped at 2^31 − 1 (a class no model has) instead of wrapped round. */
export function labelsToInt32(values: readonly number[]): Int32Array {
  return Int32Array.from(values, (v) => Math.min(v, 2 ** 31 - 1));
}

/** readLabels' numbers as written in the file (non-negative integers; one per sample). */
export function readLabelValues(file: string, count: number): number[] {
  const lines = readChecked(file, 'labels file')
    .toString('utf8')
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l !== '');
  const out = lines.map((l, i) => {
    const v = Number(l);
    if (!Number.isSafeInteger(v) || v < 0)
      throw new CliError(`${file}, label ${i + 1}: ${quoted(l)} is not a class index (a non-negative integer)`);
    return v;
  });
  if (out.length !== count)
    throw new CliError(
      `${file} holds ${out.length} labels, but the data has ${count} samples (one label per sample, in sorted file-name order)`,
    );
  return out;
}
