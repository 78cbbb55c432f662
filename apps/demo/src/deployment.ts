// The demo's last stage: the fixed-point model exported as integer ONNX and run in onnxruntime-node
// on the test images beside QTK, to show the deployed file computes the same integers.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { checkIntegerOnnx, type IntegerOnnxCheck } from '@qtk/examples';
import { writeFileAtomicSync } from '@qtk/nn/node';
import { exportOnnxBytes } from '@qtk/onnx';
// registers the integer export rules exportOnnxBytes writes the fixed-point model with
import '@qtk/onnx-deploy';
import { Tensor } from '@qtk/tensor';
import type { DemoResult } from './pipeline.js';

export const FIXED_POINT_ONNX = 'fixed-point.onnx';

export interface DeploymentCheck extends IntegerOnnxCheck {
  /** Where the integer ONNX file was written. */
  path: string;
}

/** Exports `r.fixedPoint` to `dir/fixed-point.onnx` and compares onnxruntime-node with QTK on the test set. */
export async function checkDeployment(r: DemoResult, dir: string, progress: boolean): Promise<DeploymentCheck> {
  const example = new Tensor({ data: new Float32Array(28 * 28), shape: [1, 1, 28, 28], dtype: 'float32' });
  const bytes = exportOnnxBytes(r.fixedPoint, example, { inputNames: ['image'], outputNames: ['logits'] });
  mkdirSync(dir, { recursive: true });
  const path = join(dir, FIXED_POINT_ONNX);
  writeFileAtomicSync(path, bytes);
  const check = await checkIntegerOnnx(r.fixedPoint, r.test, {
    onnxBytes: bytes,
    progress,
    label: 'integer ONNX check',
  });
  return { ...check, path };
}
