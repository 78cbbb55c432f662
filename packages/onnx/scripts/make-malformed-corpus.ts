// Writes the fuzz corpus of hand-made hostile ONNX models to fixtures/malformed (small files; see
// src/fuzz/malformed-corpus.ts for what each stands for).
// Run: node --conditions=qtk-source --import tsx packages/onnx/scripts/make-malformed-corpus.ts
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { malformedCorpus } from '../src/fuzz/malformed-corpus.js';

const dir = fileURLToPath(new URL('../fixtures/malformed', import.meta.url));
mkdirSync(dir, { recursive: true });
let bytes = 0;
for (const [name, data] of malformedCorpus()) {
  writeFileSync(join(dir, name), data);
  bytes += data.byteLength;
}
console.log(`wrote ${malformedCorpus().length} files (${bytes} bytes) to ${dir}`);
