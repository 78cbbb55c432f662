import type { WasmMemory } from './wasm-api.js';

const PAGE = 65536;

/**
 * The region of wasm memory from `base` up where a call stages its operands. Calls run one at a
 * time, so each reuses the region from its start; the memory grows on demand and never shrinks.
 */
export interface Arena {
  readonly memory: WasmMemory;
  readonly base: number;
  /** Makes base..base+bytes usable (throws RangeError when the memory cannot grow) and returns the current heap view. */
  reserve(bytes: number): Float32Array;
  /** A float view of the whole memory, valid until the next reserve. */
  heap(): Float32Array;
}

export function createArena(memory: WasmMemory, base: number): Arena {
  let heap = new Float32Array(memory.buffer);
  const refresh = (): Float32Array => {
    // A shared memory's buffer keeps its old length after growing (and a plain one detaches), so compare sizes, not objects.
    if (heap.byteLength !== memory.buffer.byteLength) heap = new Float32Array(memory.buffer);
    return heap;
  };
  return {
    memory,
    base,
    reserve(bytes) {
      const need = base + bytes;
      const have = memory.buffer.byteLength;
      if (need > have) memory.grow(Math.ceil((need - have) / PAGE));
      return refresh();
    },
    heap: refresh,
  };
}

export const align64 = (x: number): number => Math.ceil(x / 64) * 64;
