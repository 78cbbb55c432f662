// Seeded byte-level mutations of an ONNX file, the inputs of the importer's fuzz test and run.
import { Generator } from '@qtk/tensor';

/** Uniform numbers in [0, 1) from @qtk/tensor's seeded Generator: the same seed gives the same mutations everywhere. */
export function seededRandom(seed: number): () => number {
  const g = new Generator(seed);
  return () => g.uniform();
}

/** Protobuf varints that make lengths, dims and counts hostile: huge, negative (two's complement), zero. */
const HOSTILE_VARINTS: readonly number[][] = [
  [0xff, 0xff, 0xff, 0xff, 0x0f], // 2^32 - 1
  [0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01], // 2^63
  [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01], // -1 as int64
  [0xa0, 0x9c, 0x01], // 20000
  [0x00],
];

export type MutationKind = 'flip' | 'byte' | 'varint' | 'truncate' | 'delete' | 'duplicate';
export const MUTATION_KINDS: readonly MutationKind[] = ['flip', 'byte', 'varint', 'truncate', 'delete', 'duplicate'];

/** One mutation of `bytes` (1 to 4 edits, each of a kind chosen by `rand`); the input is not changed. */
export function mutate(bytes: Uint8Array, rand: () => number): { bytes: Uint8Array; kinds: MutationKind[] } {
  let out = Uint8Array.from(bytes);
  const kinds: MutationKind[] = [];
  const edits = 1 + Math.floor(rand() * 4);
  const at = () => Math.floor(rand() * Math.max(1, out.length));
  for (let e = 0; e < edits && out.length > 0; e++) {
    const kind = MUTATION_KINDS[Math.floor(rand() * MUTATION_KINDS.length)]!;
    kinds.push(kind);
    const i = at();
    switch (kind) {
      case 'flip':
        out[i] = out[i]! ^ (1 << Math.floor(rand() * 8));
        break;
      case 'byte':
        out[i] = Math.floor(rand() * 256);
        break;
      case 'varint': {
        const v = HOSTILE_VARINTS[Math.floor(rand() * HOSTILE_VARINTS.length)]!;
        const next = new Uint8Array(out.length + v.length - 1);
        next.set(out.subarray(0, i));
        next.set(v, i);
        next.set(out.subarray(i + 1), i + v.length);
        out = next;
        break;
      }
      case 'truncate':
        out = out.slice(0, i);
        break;
      case 'delete': {
        const n = 1 + Math.floor(rand() * 16);
        out = Uint8Array.from([...out.subarray(0, i), ...out.subarray(i + n)]);
        break;
      }
      case 'duplicate': {
        const n = 1 + Math.floor(rand() * 32);
        const piece = out.slice(i, i + n);
        out = Uint8Array.from([...out.subarray(0, i), ...piece, ...out.subarray(i)]);
        break;
      }
    }
  }
  return { bytes: out, kinds };
}
