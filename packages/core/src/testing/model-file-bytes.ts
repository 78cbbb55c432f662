// Editing the graph JSON inside a model file's bytes, for the tests that feed the loader corrupted configs.
// Not a test file itself and not part of the package build.
import { crc32 } from '@qtk/nn';

/**
 * The model file with its graph JSON edited in place by `edit`, the graph length and the CRC recomputed, so
 * only what reads the graph can refuse it. Layout: 32-byte prefix (header length at 12, graph length at 16,
 * CRC of everything after the prefix at 20), the header, the graph, the tensor data.
 */
export function editModelFileGraph<G>(bytes: Uint8Array, edit: (graph: G) => void): Uint8Array {
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const h = dv.getUint32(12, true);
  const g = dv.getUint32(16, true);
  const graph = JSON.parse(new TextDecoder().decode(bytes.subarray(32 + h, 32 + h + g))) as G;
  edit(graph);
  const text = new TextEncoder().encode(JSON.stringify(graph));
  const out = new Uint8Array(bytes.byteLength - g + text.byteLength);
  out.set(bytes.subarray(0, 32 + h));
  out.set(text, 32 + h);
  out.set(bytes.subarray(32 + h + g), 32 + h + text.byteLength);
  const odv = new DataView(out.buffer);
  odv.setUint32(16, text.byteLength, true);
  odv.setUint32(20, crc32(out.subarray(32)), true);
  return out;
}
