// The importer's bounded fuzz test: the malformed corpus and 300 seeded mutations of two real exported
// models, each imported (and run when it imports) in a child process with a per-case time and memory
// limit. Every case must import or end in a typed error: no generic JS error, crash, hang or blow-up.
// bench/fuzz-onnx.ts runs the same with thousands of mutations.
import { fileURLToPath } from 'node:url';
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { malformedCorpus } from './malformed-corpus.js';
import { mutate, seededRandom } from './mutate.js';
import { runFuzz } from './run-fuzz.js';

const corpusDir = fileURLToPath(new URL('../../fixtures/malformed', import.meta.url));

describe('ONNX import fuzzing', () => {
  it('mutations are seeded: the same seed gives the same bytes', () => {
    const base = Uint8Array.from({ length: 200 }, (_, i) => i);
    const a = mutate(base, seededRandom(7));
    const b = mutate(base, seededRandom(7));
    expect(Array.from(a.bytes)).toEqual(Array.from(b.bytes));
    expect(a.kinds).toEqual(b.kinds);
    expect(Array.from(mutate(base, seededRandom(8)).bytes)).not.toEqual(Array.from(a.bytes));
  });

  it('the corpus and 300 mutations: every case imports or ends in a typed error, within 10 s and 1 GiB each', async () => {
    const r = await runFuzz({ seed: 20261125, count: 300, corpusDir, caseTimeoutMs: 10_000, maxRssMiB: 1024 });
    const corpus = readdirSync(corpusDir).filter((f) => f.endsWith('.onnx')).length;
    expect(r.tried).toBe(300 + corpus);
    expect(r.failures).toEqual([]);
    expect(r.counts.typed).toBeGreaterThan(100); // the mutations do reach the importer's checks
    expect(r.counts.imported).toBeGreaterThan(0); // and some stay valid models that run
    // each hand-made hostile model is rejected with a typed error, except the node names that must import and run
    expect(Object.keys(r.corpus)).toEqual(
      malformedCorpus()
        .map(([n]) => n)
        .sort(),
    );
    for (const [name, outcome] of Object.entries(r.corpus))
      expect([name, outcome]).toEqual([name, name.startsWith('node-named-') ? 'imported' : 'typed']);
  }, 120_000);

  it('the corpus on disk is what malformed-corpus.ts makes (scripts/make-malformed-corpus.ts writes it)', () => {
    for (const [name, bytes] of malformedCorpus())
      expect(Array.from(readFileSync(`${corpusDir}/${name}`)), name).toEqual(Array.from(bytes));
  });

  it('the harness counts a hang, a memory blow-up, a crash and a generic error, and goes on after each', async () => {
    const childScript = fileURLToPath(new URL('./misbehaving-child.ts', import.meta.url));
    // A generous case limit: under load the blow-up case must reach the memory limit before it counts as a hang.
    const r = await runFuzz({ seed: 1, count: 6, childScript, caseTimeoutMs: 8000, maxRssMiB: 300 });
    expect(r.tried).toBe(6);
    expect(r.counts).toEqual({ imported: 0, typed: 2, generic: 1, hang: 1, crash: 1, memory: 1 });
    expect(r.failures.map((f) => [f.i, f.outcome])).toEqual([
      [1, 'hang'],
      [2, 'memory'],
      [3, 'crash'],
      [4, 'generic'],
    ]);
  }, 60_000);
});
