import { describe, expect, it } from 'vitest';
import { DataFormatError } from '../errors.js';
import { parseNpy, serializeNpy } from './npy.js';

describe('serializeNpy', () => {
  it('writes a v1.0 float32 header padded to 64 bytes that parseNpy reads back exactly', () => {
    const data = new Float32Array([1.5, -2, 3e-8, Number.NEGATIVE_INFINITY, 0, 7]);
    const bytes = serializeNpy([2, 1, 3], data);
    expect([...bytes.subarray(0, 8)]).toEqual([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0]);
    const headerLength = bytes[8]! + 256 * bytes[9]!;
    expect((10 + headerLength) % 64).toBe(0);
    expect(new TextDecoder().decode(bytes.subarray(10, 10 + headerLength)).trimEnd()).toBe(
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 1, 3), }",
    );
    const a = parseNpy(bytes);
    expect(a.shape).toEqual([2, 1, 3]);
    expect([...a.data]).toEqual([...data]);
  });

  it("writes a 1-d shape as numpy does ('(4,)') and a 0-d one as '()'", () => {
    expect(parseNpy(serializeNpy([4], new Float32Array(4))).shape).toEqual([4]);
    expect(new TextDecoder().decode(serializeNpy([4], new Float32Array(4)))).toContain("'shape': (4,)");
    expect(parseNpy(serializeNpy([], new Float32Array([2.5]))).data[0]).toBe(2.5);
  });

  it('refuses data whose length is not the shape’s size', () => {
    expect(() => serializeNpy([2, 2], new Float32Array(3))).toThrow(DataFormatError);
    expect(() => serializeNpy([2, 2], new Float32Array(3))).toThrow('shape (2, 2) holds 4 values, got 3');
  });
});
