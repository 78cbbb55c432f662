// The embedded demo: the reference network with its pretrained weights (apps/demo/assets/reference-net.qtk)
// exported to ONNX, calibrated on the first training images of the Fashion-MNIST subset committed with the
// repository (data/fashion-mnist-subset) and evaluated on its 2,000 test images, as `pnpm demo` does.
import { ReferenceNet } from '@qtk/examples/reference-net';
import { symbolicTrace } from '@qtk/ir';
import { deserializeStateDict, fashionMnistFromIdx, parseIdx } from '@qtk/nn';
import { exportOnnxBytes } from '@qtk/onnx';
import { Tensor } from '@qtk/tensor';
import type { LabelledSamples } from './quantize-job.js';

/** The demo's files as stored: the state dict, and the four gzip-compressed IDX files. */
export interface DemoFiles {
  readonly weights: Uint8Array;
  readonly trainImages: Uint8Array;
  readonly trainLabels: Uint8Array;
  readonly testImages: Uint8Array;
  readonly testLabels: Uint8Array;
}

/** Calibration images of the demo (the first training images), as in `pnpm demo`. */
export const DEMO_CALIBRATION_IMAGES = 1024;
export const DEMO_MODEL_NAME = 'reference-net.onnx';

/**
 * Inflates gzip bytes with the platform's DecompressionStream (browsers, Node >= 18). Bytes without the gzip
 * magic are returned as they are: a server may send a .gz file with Content-Encoding: gzip, and then the
 * browser has already inflated it.
 */
export async function gunzip(bytes: Uint8Array): Promise<Uint8Array> {
  if (bytes[0] !== 0x1f || bytes[1] !== 0x8b) return bytes;
  const stream = new Blob([bytes as BlobPart]).stream().pipeThrough(new DecompressionStream('gzip'));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

async function split(images: Uint8Array, labels: Uint8Array, name: string) {
  const [i, l] = await Promise.all([gunzip(images), gunzip(labels)]);
  return fashionMnistFromIdx(parseIdx(i, `${name} images`), parseIdx(l, `${name} labels`), {
    sources: { images: `${name} images`, labels: `${name} labels` },
  });
}

/** The demo model as ONNX bytes, its calibration images and its labelled test images. */
export async function demoInputs(
  files: DemoFiles,
  calibrationImages = DEMO_CALIBRATION_IMAGES,
): Promise<{ onnx: Uint8Array; calibration: Tensor; test: LabelledSamples }> {
  const net = new ReferenceNet();
  net.loadStateDict(deserializeStateDict(files.weights, 'reference-net.qtk'));
  const example = new Tensor({ data: new Float32Array(28 * 28), shape: [1, 1, 28, 28], dtype: 'float32' });
  const onnx = exportOnnxBytes(symbolicTrace(net.eval()), example, { inputNames: ['image'], outputNames: ['logits'] });
  const train = await split(files.trainImages, files.trainLabels, 'train');
  const test = await split(files.testImages, files.testLabels, 'test');
  const n = Math.min(calibrationImages, train.images.shape[0]!);
  const calibration = new Tensor({
    data: (train.images.values() as Float32Array).slice(0, n * 784),
    shape: [n, 1, 28, 28],
    dtype: 'float32',
  });
  return { onnx, calibration, test: { images: test.images, labels: test.labels.values() as Int32Array } };
}
