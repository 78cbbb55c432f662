import { describe, expect, it } from 'vitest';
import { orCpu } from './cpu-fallback.js';

describe('orCpu', () => {
  it('returns the wasm result and notes nothing when wasm runs', () => {
    const notes: string[] = [];
    expect(
      orCpu(
        (what) => notes.push(what),
        'Relu',
        '2×3',
        () => 1,
        () => 2,
      ),
    ).toBe(1);
    expect(notes).toEqual([]);
  });

  it('notes the op and runs cpu when wasm memory could not grow; other errors propagate', () => {
    const notes: string[] = [];
    const note = (what: string, e: Error) => notes.push(`${what}: ${e.message}`);
    const grow = () => {
      throw new RangeError('WebAssembly.Memory.grow(): Maximum memory size exceeded');
    };
    expect(orCpu(note, 'Conv', '1×3×8×8', grow, () => 'cpu')).toBe('cpu');
    expect(notes).toEqual(['Conv 1×3×8×8: WebAssembly.Memory.grow(): Maximum memory size exceeded']);
    const bad = () => {
      throw new TypeError('not a Float32Array');
    };
    expect(() => orCpu(note, 'Conv', '1×3×8×8', bad, () => 'cpu')).toThrow(TypeError);
    expect(notes).toHaveLength(1);
  });
});
