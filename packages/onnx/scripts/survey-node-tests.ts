// Runs every ONNX backend node test whose operators the importer handles, prints the failures and writes
// the passing directory names (one per line) to the file given as the first argument.
// node --conditions=qtk-source --import tsx packages/onnx/scripts/survey-node-tests.ts /tmp/pass.txt
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { NODE_TEST_ROOT, runNodeTest } from '../src/testing/node-tests.js';
import { SUPPORTED_ONNX_OPS } from '../src/index.js';
import { decodeModel, type ModelMsg } from '../src/onnx-schema.js';

const ops = new Set(SUPPORTED_ONNX_OPS);
const pass: string[] = [];
const fail: string[] = [];
for (const d of readdirSync(NODE_TEST_ROOT).sort()) {
  let m: ModelMsg;
  try {
    m = decodeModel(readFileSync(`${NODE_TEST_ROOT}/${d}/model.onnx`));
  } catch {
    continue;
  }
  const types = (m.graph?.node ?? []).map((n) => n.op_type ?? '');
  if (!types.every((t) => ops.has(t))) continue;
  const r = runNodeTest(d, { weightsAsInitializers: process.env.WEIGHTS === '1' });
  if (r.ok) pass.push(d);
  else fail.push(`${d}: ${r.message}`);
}
console.log(fail.join('\n'));
console.log(`PASS ${pass.length} FAIL ${fail.length}`);
if (process.argv[2]) writeFileSync(process.argv[2], `${pass.join('\n')}\n`);
