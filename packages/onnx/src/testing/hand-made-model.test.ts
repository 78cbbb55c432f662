import { describe, expect, it } from 'vitest';
import { DataType } from '../onnx-schema.js';
import { floatInitializer } from './hand-made-model.js';

const floatsOf = (raw: Uint8Array | undefined) =>
  Array.from(new Float32Array(raw!.buffer, raw!.byteOffset, raw!.length / 4));

describe('floatInitializer', () => {
  it('holds the given values as raw float32 data of the given dims', () => {
    const t = floatInitializer('w', [2, 1], [1.5, -2]);
    expect([t.name, t.dims, t.data_type]).toEqual(['w', [2, 1], DataType.FLOAT]);
    expect(floatsOf(t.raw_data)).toEqual([1.5, -2]);
  });

  it('fills a ramp (i mod 7) / 7 - 0.5 without values', () => {
    const ramp = floatsOf(floatInitializer('b', [3, 3]).raw_data);
    expect(ramp).toEqual([0, 1, 2, 3, 4, 5, 6, 0, 1].map((k) => Math.fround(k / 7 - 0.5)));
  });
});
