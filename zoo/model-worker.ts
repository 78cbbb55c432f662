// Runs one zoo model through the qtk command line (zoo/worker-steps.ts): import against onnxruntime, quantize
// plain and --hybrid on each march, SQNR against float, export + compare. Started by zoo/run.ts in a process of
// its own, which bounds its time and memory; the result file is rewritten after every step, so a model killed
// half-way keeps what it had done.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { ZooEntry } from './entries.js';
import { MARCHES, MODES, type ModelResult } from './result.js';
import { importStep, marchStep } from './worker-steps.js';

async function run(entryFile: string, resultFile: string, work: string): Promise<void> {
  const e = JSON.parse(readFileSync(entryFile, 'utf8')) as ZooEntry;
  const result: ModelResult = { name: e.name, imports: [], marches: [], finished: false };
  const save = () => writeFileSync(resultFile, `${JSON.stringify(result, null, 1)}\n`);
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  save();
  await importStep(e, result, save, work);
  // quantize imports the model itself: tried even when the import check failed, for its own reason
  if (e.onnx) {
    for (const march of MARCHES)
      for (const mode of MODES) {
        result.step = `${march} ${mode}`;
        save();
        result.marches.push(await marchStep(e, march, mode, work));
        save();
      }
  }
  delete result.step;
  result.finished = true;
  save();
}

const [entryFile, resultFile, work] = process.argv.slice(2);
if (!entryFile || !resultFile || !work) {
  process.stderr.write('usage: model-worker.ts ENTRY.json RESULT.json WORKDIR (started by zoo/run.ts)\n');
  process.exit(2);
}
await run(entryFile, resultFile, work);
