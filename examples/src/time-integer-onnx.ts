// Times the reference network's integer ONNX export in onnxruntime-node against QTK's own fixed-point
// forward on a batch of 64 28×28 images, per march (and checks that every node's integers agree).
// node --conditions=qtk-source --import tsx examples/src/time-integer-onnx.ts
import { exportOnnxBytes } from '@qtk/onnx';
import { formatRuntimeComparison } from '@qtk/onnx-deploy';
import { compareWithRuntime } from '@qtk/onnx-deploy/node';
import { Generator, noGrad, rand, type Tensor } from '@qtk/tensor';
import * as ort from 'onnxruntime-node';
import { fixedReferenceNet } from './reference-net-fixed.js';

const RUNS = 5;

async function bestMs(f: () => unknown): Promise<number> {
  await f();
  let min = Number.POSITIVE_INFINITY;
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
  const fixed = fixedReferenceNet(march, dtype);
  const x = rand([64, 1, 28, 28], { generator: new Generator(3) })
    .mul(2)
    .sub(1);
  const bytes = exportOnnxBytes(fixed, [x]);
  const comparison = await compareWithRuntime(fixed, bytes, [x]);
  const feeds = (s: ort.InferenceSession) => ({
    [s.inputNames[0]!]: new ort.Tensor('float32', x.values() as Float32Array, [...x.shape]),
  });
  const all = await ort.InferenceSession.create(bytes);
  const one = await ort.InferenceSession.create(bytes, { intraOpNumThreads: 1 });
  const ortMs = await bestMs(() => all.run(feeds(all)));
  const ort1Ms = await bestMs(() => one.run(feeds(one)));
  const qtkMs = await bestMs(() => noGrad(() => (fixed as unknown as { call(t: Tensor): Tensor }).call(x)));
  console.log(
    `${march} ${dtype}: ${formatRuntimeComparison(comparison)}; ORT ${ortMs.toFixed(0)} ms (1 thread ${ort1Ms.toFixed(0)} ms), QTK ${qtkMs.toFixed(0)} ms (best of ${RUNS}, batch 64); ${(bytes.byteLength / 1024).toFixed(0)} KiB`,
  );
  await all.release();
  await one.release();
}
