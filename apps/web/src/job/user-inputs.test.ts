import { describe, expect, it } from 'vitest';
import { JobError } from './quantize-job.js';
import { parseLabels, type RgbaImage, samplesFromFiles } from './user-inputs.js';

/** A little-endian float32 .npy file of `shape`. */
function npy(shape: number[], values: number[]): Uint8Array {
  let header = `{'descr': '<f4', 'fortran_order': False, 'shape': (${shape.join(', ')}${shape.length === 1 ? ',' : ''}), }`;
  while ((10 + header.length + 1) % 64) header += ' ';
  header += '\n';
  const out = new Uint8Array(10 + header.length + values.length * 4);
  out.set([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0, header.length & 255, header.length >> 8]);
  out.set(new TextEncoder().encode(header), 10);
  new Float32Array(out.buffer, 10 + header.length).set(values);
  return out;
}

function image(
  name: string,
  width: number,
  height: number,
  rgba: (x: number, y: number) => [number, number, number],
): RgbaImage {
  const data = new Uint8Array(width * height * 4);
  for (let y = 0; y < height; y++) for (let x = 0; x < width; x++) data.set([...rgba(x, y), 255], (y * width + x) * 4);
  return { name, width, height, data };
}

const norm = { mean: [0.5], std: [0.5] };

describe('samplesFromFiles', () => {
  it('keeps an image of the model size as is, normalised to (p/255 - mean)/std, greyscale by BT.601', () => {
    const img = image('a.png', 2, 2, (x, y) => [x * 255, y * 255, 0]);
    const t = samplesFromFiles([{ kind: 'image', image: img }], [1, 2, 2], norm);
    expect(t.shape).toEqual([1, 1, 2, 2]);
    const grey = [0, 0.299 * 255, 0.587 * 255, (0.299 + 0.587) * 255];
    const want = grey.map((g) => (g / 255 - 0.5) / 0.5);
    expect([...t.values()].map((v) => Number(v.toFixed(5)))).toEqual(
      want.map((v) => Number(Math.fround(v).toFixed(5))),
    );
  });

  it('resizes bilinearly with centre-aligned pixels and normalises each RGB channel with its own mean and std', () => {
    // 4 wide, 1 high, red ramp 0, 85, 170, 255; halved to 2 pixels: centres at 0.5 and 2.5
    const img = image('ramp.png', 4, 1, (x) => [x * 85, 255, 0]);
    const t = samplesFromFiles([{ kind: 'image', image: img }], [3, 1, 2], { mean: [0, 1, 0], std: [1, 1, 2] });
    const v = [...t.values()];
    expect(v[0]).toBeCloseTo(42.5 / 255, 6);
    expect(v[1]).toBeCloseTo(212.5 / 255, 6);
    expect(v[2]).toBe(0); // green 255: (1 - 1) / 1
    expect(v[4]).toBe(0); // blue 0: (0 - 0) / 2
  });

  it('stacks .npy samples and batches in file order, checking their shape', () => {
    const t = samplesFromFiles(
      [
        { kind: 'npy', name: 'one.npy', bytes: npy([2], [1, 2]) },
        { kind: 'npy', name: 'batch.npy', bytes: npy([2, 2], [3, 4, 5, 6]) },
      ],
      [2],
      norm,
    );
    expect(t.shape).toEqual([3, 2]);
    expect([...t.values()]).toEqual([1, 2, 3, 4, 5, 6]);
    expect(() => samplesFromFiles([{ kind: 'npy', name: 'bad.npy', bytes: npy([3], [1, 2, 3]) }], [2], norm)).toThrow(
      /bad\.npy: holds shape \[3\]; the model takes samples of shape \[2\]/,
    );
  });

  it('refuses non-finite samples, no samples, and images for a model that does not take images', () => {
    expect(() =>
      samplesFromFiles([{ kind: 'npy', name: 'n.npy', bytes: npy([2], [1, Number.NaN]) }], [2], norm),
    ).toThrow(/NaN/);
    expect(() => samplesFromFiles([], [2], norm)).toThrow(JobError);
    const img = image('a.png', 2, 2, () => [0, 0, 0]);
    expect(() => samplesFromFiles([{ kind: 'image', image: img }], [10], norm)).toThrow(
      /not images \(use \.npy files\)/,
    );
  });
});

describe('parseLabels', () => {
  it('reads one class per line for the samples, ignoring blank lines', () => {
    expect([...parseLabels('3\n\n1\r\n4\n', 3)]).toEqual([3, 1, 4]);
  });
  it('names the line that is not a class, and a short file', () => {
    expect(() => parseLabels('1\ncat\n', 2)).toThrow(/line 2: 'cat' is not a class index/);
    expect(() => parseLabels('1\n', 2)).toThrow(/1 labels for 2 samples/);
  });
});
