import { describe, expect, it } from 'vitest';
import { DataType } from './onnx-schema.js';
import { readTensorProto } from './tensor-proto.js';

describe('readTensorProto', () => {
  it('raw float data at any byte offset reads as the little-endian floats, special values included', () => {
    const values = [1.5, -0, Number.NaN, Infinity, -Infinity, 1e-45, -3.4028234663852886e38, 0.1];
    const bytes = new Uint8Array(1 + values.length * 4);
    const view = new DataView(bytes.buffer);
    for (const [i, v] of values.entries()) view.setFloat32(1 + 4 * i, v, true);
    const raw = bytes.subarray(1); // an odd byte offset, as a field inside a protobuf buffer has
    const c = readTensorProto({ name: 'w', data_type: DataType.FLOAT, dims: [2, 4], raw_data: raw });
    expect(c.shape).toEqual([2, 4]);
    expect(c.numbers.map((v) => (Object.is(v, -0) ? '-0' : v))).toEqual([
      1.5,
      '-0',
      Number.NaN,
      Infinity,
      -Infinity,
      Math.fround(1e-45),
      -3.4028234663852886e38,
      Math.fround(0.1),
    ]);
  });

  it('a raw buffer shorter than its shape is refused, naming the tensor', () => {
    expect(() =>
      readTensorProto({ name: 'w', data_type: DataType.FLOAT, dims: [3], raw_data: new Uint8Array(8) }),
    ).toThrow(/'w'/);
  });
});
