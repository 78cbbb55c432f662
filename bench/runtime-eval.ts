// The eval protocol's forward passes in onnxruntime-node: the float model exported once, then batch by batch, the
// predicted class of each image (the engine `qtk eval` uses for float models).
import { takeBatch, type Dataset } from '@qtk/examples';
import type { Module } from '@qtk/nn';
import { exportOnnxBytes, RuntimeModel } from '@qtk/onnx';
import { argmax } from '@qtk/tensor';
import * as ort from 'onnxruntime-node';

/** Each image's predicted class with the model run in onnxruntime-node (export and session creation included). */
export async function predictOnRuntime(model: Module, data: Dataset, batchSize = 500): Promise<Int32Array> {
  model.eval();
  const n = data.images.shape[0]!;
  const runtime = await RuntimeModel.create(ort, exportOnnxBytes(model, takeBatch(data, null, 0, 1).images));
  const out = new Int32Array(n);
  try {
    for (let i = 0; i < n; i += batchSize) {
      const m = Math.min(batchSize, n - i);
      const [scores] = await runtime.outputs([takeBatch(data, null, i, m).images]);
      out.set(argmax(scores!, 1).values() as Int32Array, i);
    }
  } finally {
    await runtime.release();
  }
  return out;
}
