// For every listed node test: import, export at opset 17, run the export in onnxruntime-node and compare
// with the test's expected outputs; prints the failures.
import { readFileSync } from 'node:fs';
import * as ort from 'onnxruntime-node';
import { exportOnnxBytes, importOnnx } from '../src/index.js';
import { compareTensors, loadNodeTest } from '../src/testing/node-tests.js';
import { Tensor } from '@qtk/tensor';

const dirs = readFileSync(new URL('../conformance/node-tests.txt', import.meta.url), 'utf8').split('\n').filter((l) => l && !l.startsWith('#'));
let ok = 0;
const fails: string[] = [];
for (const dir of dirs) {
  try {
    const { bytes, cases } = loadNodeTest(dir);
    const c = cases[0]!;
    const gm = importOnnx(bytes, { fixedInputs: c.fixed, exampleInputs: Object.fromEntries(c.runtime.map((r) => [r.name, r.tensor])) });
    const out = exportOnnxBytes(gm, c.runtime.map((r) => r.tensor), { opset: 17, dynamicBatch: false, inputNames: c.runtime.map((r) => r.name) });
    const session = await ort.InferenceSession.create(out);
    const feeds = Object.fromEntries(c.runtime.map((r) => [r.name, new ort.Tensor('float32', Float32Array.from(r.tensor.values() as Float32Array), r.tensor.shape)]));
    const res = await session.run(feeds);
    const err = c.expected.map((e, i) => {
      const o = res[session.outputNames[i]!]!;
      const data = o.type === 'bool' ? Uint8Array.from(o.data as ArrayLike<number>) : o.type === 'int64' ? Int32Array.from(o.data as BigInt64Array, Number) : (o.data as Float32Array);
      const t = new Tensor({ data, shape: [...o.dims], dtype: o.type === 'float32' ? 'float32' : o.type === 'bool' ? 'bool' : 'int32' });
      return compareTensors(t, e, 1e-3, 1e-7);
    }).find((x) => x);
    if (err) fails.push(`${dir}: ${err}`);
    else ok++;
  } catch (e) {
    fails.push(`${dir}: ${(e as Error).message.split('\n')[0]}`);
  }
}
console.log(fails.join('\n'));
console.log(`EXPORT OK ${ok} FAIL ${fails.length}`);
