// Times the integer ONNX export of the residual test network (src/testing/residual-net.ts) in
// onnxruntime-node against QTK's own fixed-point forward, on a batch of 64 28×28 images, per march.
// node --conditions=qtk-source --import tsx packages/onnx/scripts/time-integer-export.ts
import { noGrad, type Tensor } from '@qtk/tensor';
import * as ort from 'onnxruntime-node';
import { compareWithRuntime, formatRuntimeComparison } from '../src/compare-runtime.js';
import { exportOnnxBytes } from '../src/export-onnx.js';
import { decodeModel } from '../src/onnx-schema.js';
import { fixedPointOf, uniformInput } from '../src/testing/fixed-models.js';
import { ResidualNet } from '../src/testing/residual-net.js';

const RUNS = 5;

async function best(f: () => Promise<unknown> | unknown): Promise<number> {
  await f();
  let min = Infinity;
  for (let i = 0; i < RUNS; i++) {
    const t0 = performance.now();
    await f();
    min = Math.min(min, performance.now() - t0);
  }
  return min;
}

for (const [march, dtype] of [
  ['bayes', 'qint8'],
  ['bayes', 'qint16'],
  ['bernoulli2', 'qint8'],
] as const) {
  const fixed = fixedPointOf(new ResidualNet(), {
    march,
    dtype,
    outModules: ['fc'],
    calibration: [uniformInput([8, 1, 28, 28], 1, 0, 1), uniformInput([8, 1, 28, 28], 2, 0, 1)],
  });
  const x = uniformInput([64, 1, 28, 28], 3, -0.2, 1.5);
  const bytes = exportOnnxBytes(fixed, [x]);
  const comparison = await compareWithRuntime(fixed, bytes, [x]);
  const session = await ort.InferenceSession.create(bytes);
  const single = await ort.InferenceSession.create(bytes, { intraOpNumThreads: 1 });
  const feeds = { [session.inputNames[0]!]: new ort.Tensor('float32', x.values() as Float32Array, [...x.shape]) };
  const ortMs = await best(() => session.run(feeds));
  const ort1Ms = await best(() => single.run(feeds));
  const qtkMs = await best(() => noGrad(() => (fixed as unknown as { call(t: Tensor): Tensor }).call(x)));
  const nodes = decodeModel(bytes).graph?.node?.length ?? 0;
  console.log(
    `${march} ${dtype}: ${formatRuntimeComparison(comparison)}; ORT ${ortMs.toFixed(1)} ms (1 thread: ${ort1Ms.toFixed(1)} ms), QTK ${qtkMs.toFixed(1)} ms (best of ${RUNS}, batch 64); ${nodes} ONNX nodes, ${(bytes.byteLength / 1024).toFixed(0)} KiB`,
  );
  await session.release();
  await single.release();
}
