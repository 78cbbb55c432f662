// Regenerates data/fashion-mnist-subset/ (the images the tests and the demo use) from the full
// Fashion-MNIST IDX files: the first 4,000 training and first 2,000 test images with their labels.
// Usage: node --import tsx scripts/make-data-subset.ts [--data DIR] [--train N] [--test N]
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { gunzipSync, gzipSync } from 'node:zlib';

const { values } = parseArgs({
  options: {
    data: { type: 'string', default: '/usr/share/datasets/fashion-mnist' },
    train: { type: 'string', default: '4000' },
    test: { type: 'string', default: '2000' },
    out: { type: 'string', default: 'data/fashion-mnist-subset' },
  },
});

/** Keeps the first `count` items of an IDX file (header rewritten with the new count). */
function truncateIdx(bytes: Uint8Array, count: number): Uint8Array {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const ndim = bytes[3]!;
  const dims = Array.from({ length: ndim }, (_, i) => view.getUint32(4 + 4 * i));
  if (count > dims[0]!) throw new Error(`asked for ${count} items, the file has ${dims[0]}`);
  const itemBytes = dims.slice(1).reduce((a, b) => a * b, 1);
  const header = 4 + 4 * ndim;
  const out = bytes.slice(0, header + count * itemBytes);
  new DataView(out.buffer).setUint32(4, count);
  return out;
}

mkdirSync(values.out!, { recursive: true });
for (const [prefix, n] of [
  ['train', Number(values.train)],
  ['t10k', Number(values.test)],
] as const) {
  for (const kind of ['images-idx3', 'labels-idx1']) {
    const name = `${prefix}-${kind}-ubyte.gz`;
    const raw = gunzipSync(readFileSync(join(values.data!, name)));
    const target = join(values.out!, name);
    writeFileSync(`${target}.tmp`, gzipSync(truncateIdx(raw, n), { level: 9 }));
    renameSync(`${target}.tmp`, target);
    console.log(`wrote ${target} (${n} items)`);
  }
}
