// Runs every backend node test whose operators the importer handles and lists the failures; writes the passing names.
import { readdirSync, readFileSync } from 'node:fs';
import { runNodeTest, NODE_TEST_ROOT } from '../src/testing/node-tests.ts';
import { SUPPORTED_ONNX_OPS } from '../src/index.ts';
import { decodeModel } from '../src/onnx-schema.ts';
const ops = new Set(SUPPORTED_ONNX_OPS);
const pass: string[] = [], fail: string[] = [];
for (const d of readdirSync(NODE_TEST_ROOT).sort()) {
  if (d.endsWith('_expanded')) continue;
  let m; try { m = decodeModel(readFileSync(`${NODE_TEST_ROOT}/${d}/model.onnx`)); } catch { continue; }
  const types = (m.graph?.node ?? []).map((n) => n.op_type!);
  if (!types.every((t) => ops.has(t))) continue;
  const r = runNodeTest(d);
  (r.ok ? pass : fail).push(r.ok ? d : `${d}: ${r.message}`);
}
console.log(fail.join('\n'));
console.log('PASS', pass.length, 'FAIL', fail.length);
(await import("node:fs")).writeFileSync('process.argv[2] ?? '/tmp/onnx-node-tests-pass.txt'', pass.join('\n') + '\n');
