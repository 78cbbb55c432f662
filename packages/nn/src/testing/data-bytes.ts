// Small IDX and .npy files built byte by byte, for the readers' tests.

const u32be = (n: number) => [(n >>> 24) & 255, (n >>> 16) & 255, (n >>> 8) & 255, n & 255];

/** An IDX file: dtype `code`, big-endian dims, then `body` as given. */
export function idxBytes(code: number, dims: number[], body: number[]): Uint8Array {
  return Uint8Array.from([0, 0, code, dims.length, ...dims.flatMap(u32be), ...body]);
}

/** A .npy file of format version `major` with `header` padded to 64 bytes, then `body`. */
export function npyBytes(major: number, header: string, body: Uint8Array): Uint8Array {
  const lenBytes = major === 1 ? 2 : 4;
  const pre = 8 + lenBytes;
  let h = header;
  while ((pre + h.length + 1) % 64 !== 0) h += ' ';
  h += '\n';
  const out = new Uint8Array(pre + h.length + body.length);
  out.set([0x93, ...new TextEncoder().encode('NUMPY'), major, 0]);
  const dv = new DataView(out.buffer);
  if (major === 1) dv.setUint16(8, h.length, true);
  else dv.setUint32(8, h.length, true);
  out.set(new TextEncoder().encode(h), pre);
  out.set(body, pre + h.length);
  return out;
}
