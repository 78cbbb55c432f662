// qtk quantize --engine: calibration's forward passes in onnxruntime-node (the default) or in QTK give the same
// fixed-point model up to float rounding of the scales, and the summary and the model file say which ran.
import '@qtk/march-bayes';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadModelFileSync } from '@qtk/core/node';
import { QTensor } from '@qtk/fixed-point';
import { parseNpy } from '@qtk/nn';
import { Generator, noGrad, Tensor } from '@qtk/tensor';
import { beforeAll, describe, expect, it } from 'vitest';
import { randomNpy, runQuantize, tempDir, TinyNet, writeOnnx } from './testing/fixtures.js';

let dir: string;
let tiny: string;
let calib: string;

beforeAll(() => {
  dir = tempDir();
  const g = new Generator(12);
  tiny = writeOnnx(join(dir, 'tiny.onnx'), new TinyNet(g));
  calib = join(dir, 'calib');
  mkdirSync(calib);
  writeFileSync(join(calib, 'batch.npy'), randomNpy([24, 1, 28, 28], g));
});

/** The integer outputs of a fixed-point model file on `x`. */
function integerOutputs(path: string, x: Tensor): Int32Array {
  const y = noGrad(() => (loadModelFileSync(path).model as unknown as { call(x: Tensor): unknown }).call(x));
  if (!(y instanceof QTensor)) throw new Error('expected a quantized output');
  return Int32Array.from(y.ints());
}

describe('qtk quantize --engine', () => {
  it('calibrates in onnxruntime-node by default, and its fixed-point model matches the one calibrated in QTK', async () => {
    const viaOrt = join(dir, 'ort.qtk');
    const viaQtk = join(dir, 'qtk.qtk');
    const a = await runQuantize(tiny, calib, viaOrt, { batch: '8' });
    const b = await runQuantize(tiny, calib, viaQtk, { batch: '8', engine: 'qtk' });
    expect([a.code, b.code]).toEqual([0, 0]);
    expect(a.stdout).toMatch(/^engine: {7}calibration in onnxruntime-node \d+\.\d+\.\d+$/m);
    expect(b.stdout).toMatch(/^engine: {7}calibration in qtk$/m);
    const fa = loadModelFileSync(viaOrt);
    expect((fa.meta.calibration as { engine: string }).engine).toMatch(/^onnxruntime-node /);
    // the same fixed-point model but where a scale's last bit flipped a rounding: at most one step, rarely
    const npy = parseNpy(readFileSync(join(calib, 'batch.npy')));
    const x = new Tensor({ data: npy.data as Float32Array, shape: npy.shape, dtype: 'float32' });
    const ya = integerOutputs(viaOrt, x);
    const yb = integerOutputs(viaQtk, x);
    let differing = 0;
    ya.forEach((v, i) => {
      expect(Math.abs(v - yb[i]!)).toBeLessThanOrEqual(1);
      if (v !== yb[i]) differing++;
    });
    expect(differing).toBeLessThanOrEqual(ya.length / 100);
  });

  it('keeps a calibration of fewer than 16 samples in QTK under auto, where the set-up would not pay, and says so', async () => {
    const few = join(dir, 'few');
    mkdirSync(few);
    writeFileSync(join(few, 'batch.npy'), randomNpy([8, 1, 28, 28], new Generator(13)));
    const auto = await runQuantize(tiny, few, join(dir, 'few-auto.qtk'));
    expect(auto.stdout).toMatch(
      /^engine: {7}calibration in qtk \(8 sample\(s\): onnxruntime-node pays for its set-up from 16\)$/m,
    );
    const ort = await runQuantize(tiny, few, join(dir, 'few-ort.qtk'), { engine: 'ort' });
    expect(ort.stdout).toMatch(/^engine: {7}calibration in onnxruntime-node /m);
  });

  it('refuses an engine it does not know, naming the choices', async () => {
    const r = await runQuantize(tiny, calib, join(dir, 'x.qtk'), { engine: 'tvm' });
    expect([r.code, r.stderr]).toEqual([
      2,
      expect.stringContaining("--engine must be one of auto, ort, qtk, got 'tvm'"),
    ]);
  });
});
