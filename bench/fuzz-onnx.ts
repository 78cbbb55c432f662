// The ONNX importer's fuzz run: N seeded byte-level mutations of two real exported models (and the
// malformed corpus), each imported and, when it imports, run once, in a child process with a per-case
// time and memory limit. Prints the tally; exits 1 if any case ends in a generic error, a crash, a
// hang or a memory blow-up.
// Run: node --conditions=qtk-source --import tsx bench/fuzz-onnx.ts [count=5000] [seed=1]
import { fileURLToPath } from 'node:url';
import { runFuzz } from '../packages/onnx/src/fuzz/run-fuzz.js';

const count = Number(process.argv[2] ?? 5000);
const seed = Number(process.argv[3] ?? 1);
const corpusDir = fileURLToPath(new URL('../packages/onnx/fixtures/malformed', import.meta.url));
const t0 = performance.now();
const r = await runFuzz({ seed, count, corpusDir });
const c = r.counts;
console.log('| tried | imported and ran | typed error | generic error | crash | hang | memory |');
console.log('| --- | --- | --- | --- | --- | --- | --- |');
console.log(`| ${r.tried} | ${c.imported} | ${c.typed} | ${c.generic} | ${c.crash} | ${c.hang} | ${c.memory} |`);
console.log(
  `peak resident set ${r.peakRssMiB.toFixed(0)} MiB (case ${r.peakCase}), slowest case ${r.slowestMs} ms, ${((performance.now() - t0) / 1000).toFixed(0)} s in all`,
);
for (const f of r.failures.slice(0, 30)) console.log(`  case ${f.i}: ${f.outcome}${f.error ? ` (${f.error})` : ''}`);
process.exit(c.generic + c.crash + c.hang + c.memory > 0 ? 1 : 0);
