// ONNX Runtime's own way to calibrate, timed in onnxruntime-node: the graph its static quantizer's MinMax
// calibrator runs (bench/torchvision-models.py writes it: a ReduceMin and a ReduceMax output for every float
// tensor), one sample per run as its calibration data reader feeds a batch-1 model, the running min and max
// kept per tensor. Timed from the session's creation to the last sample's statistics, as `qtk quantize` times
// its calibration with the session's set-up included.
import { readNpy } from '@qtk/nn/node';
import * as ort from 'onnxruntime-node';

export interface OrtCalibrationTiming {
  readonly seconds: number;
  /** Tensors whose range was recorded. */
  readonly tensors: number;
}

export async function timeOrtCalibration(graphFile: string, samplesFile: string): Promise<OrtCalibrationTiming> {
  const samples = readNpy(samplesFile);
  const [n, ...sampleShape] = samples.shape;
  const size = sampleShape.reduce((p, d) => p * d, 1);
  const data = Float32Array.from(samples.data as ArrayLike<number>);
  const t0 = performance.now();
  const session = await ort.InferenceSession.create(graphFile, { logSeverityLevel: 3 });
  const inputName = session.inputNames[0]!;
  const ranges = new Map<string, [number, number]>();
  try {
    for (let i = 0; i < n!; i++) {
      const x = new ort.Tensor('float32', data.subarray(i * size, (i + 1) * size), [1, ...sampleShape]);
      const out = await session.run({ [inputName]: x });
      for (const name of session.outputNames) {
        const isMin = name.endsWith('_ReduceMin');
        if (!isMin && !name.endsWith('_ReduceMax')) continue;
        const key = name.slice(0, -'_ReduceMin'.length);
        const v = (out[name]!.data as Float32Array)[0]!;
        const r = ranges.get(key) ?? [Infinity, -Infinity];
        if (isMin) r[0] = Math.min(r[0], v);
        else r[1] = Math.max(r[1], v);
        ranges.set(key, r);
      }
    }
  } finally {
    await session.release();
  }
  return { seconds: (performance.now() - t0) / 1000, tensors: ranges.size };
}
