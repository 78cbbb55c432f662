// Exports a fixed-point model as integer ONNX and runs it in onnxruntime-node beside QTK on a
// dataset: the share of samples whose outputs are bit-identical, both accuracies and both run times,
// and a node-by-node comparison of every intermediate on the first batch.
import type { GraphModule } from '@qtk/ir';
import { ProgressBar } from '@qtk/nn';
import { exportOnnxBytes } from '@qtk/onnx';
import { formatRuntimeComparison } from '@qtk/onnx-deploy';
import { compareWithRuntime } from '@qtk/onnx-deploy/node';
import { argmax, noGrad, Tensor } from '@qtk/tensor';
import * as ort from 'onnxruntime-node';
import { takeBatch } from './batches.js';
import { accuracyOf, type Dataset } from './train.js';

export interface IntegerOnnxCheck {
  samples: number;
  /** Share of samples whose every output element is bit-identical in QTK and onnxruntime. */
  identicalOutputs: number;
  accuracy: { qtk: number; onnxruntime: number };
  /** Forward-pass seconds over the whole dataset (export excluded). */
  seconds: { qtk: number; onnxruntime: number };
  /** The first batch compared node by node. */
  intermediates: { nodes: number; identical: boolean; summary: string };
  onnxBytes: number;
}

export interface IntegerOnnxCheckOptions {
  batchSize?: number;
  /** Samples of the first batch compared node by node (default 64). */
  intermediateSamples?: number;
  opset?: number;
  /** The exported file to check (default: exported here from `fixed` with `opset`). */
  onnxBytes?: Uint8Array;
  progress?: boolean;
  label?: string;
}

function sameBits(a: Float32Array, b: Float32Array, start: number, count: number): boolean {
  for (let i = start; i < start + count; i++) if (!Object.is(a[i], b[i])) return false;
  return true;
}

/** Exports `fixed` to integer ONNX and checks it against QTK on `data` (see IntegerOnnxCheck). */
export async function checkIntegerOnnx(
  fixed: GraphModule,
  data: Dataset,
  options: IntegerOnnxCheckOptions = {},
): Promise<IntegerOnnxCheck> {
  const batchSize = options.batchSize ?? 500;
  const n = data.images.shape[0]!;
  const first = takeBatch(data, null, 0, Math.min(options.intermediateSamples ?? 64, n)).images;
  const bytes = options.onnxBytes ?? exportOnnxBytes(fixed, [first], { opset: options.opset });
  const comparison = await compareWithRuntime(fixed, bytes, [first]);
  const session = await ort.InferenceSession.create(bytes);
  const inputName = session.inputNames[0]!;
  const outputName = session.outputNames[0]!;
  const qtkPred = new Int32Array(n);
  const ortPred = new Int32Array(n);
  let identical = 0;
  let qtkSeconds = 0;
  let ortSeconds = 0;
  const bar = new ProgressBar({ total: n, label: options.label ?? 'integer ONNX check', enabled: options.progress });
  fixed.eval();
  for (let i = 0; i < n; i += batchSize) {
    const m = Math.min(batchSize, n - i);
    const { images } = takeBatch(data, null, i, m);
    let t0 = performance.now();
    const q = noGrad(() => fixed.call(images) as Tensor);
    qtkSeconds += (performance.now() - t0) / 1000;
    t0 = performance.now();
    const feed = new ort.Tensor('float32', Float32Array.from(images.values() as Float32Array), [...images.shape]);
    const r = (await session.run({ [inputName]: feed }))[outputName]!;
    ortSeconds += (performance.now() - t0) / 1000;
    const qv = q.values() as Float32Array;
    const rv = r.data as Float32Array;
    const per = qv.length / m;
    for (let s = 0; s < m; s++) if (sameBits(qv, rv, s * per, per)) identical++;
    qtkPred.set(argmax(q, 1).values() as Int32Array, i);
    const rt = new Tensor({ data: Float32Array.from(rv), shape: [...q.shape], dtype: 'float32' });
    ortPred.set(argmax(rt, 1).values() as Int32Array, i);
    bar.tick(m);
  }
  bar.finish();
  await session.release();
  return {
    samples: n,
    identicalOutputs: identical / n,
    accuracy: { qtk: accuracyOf(qtkPred, data), onnxruntime: accuracyOf(ortPred, data) },
    seconds: { qtk: qtkSeconds, onnxruntime: ortSeconds },
    intermediates: {
      nodes: comparison.nodes.length,
      identical: comparison.identical,
      summary: formatRuntimeComparison(comparison),
    },
    onnxBytes: bytes.length,
  };
}
