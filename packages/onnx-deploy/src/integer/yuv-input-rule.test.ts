import '../index.js'; // the QDQ and integer export rules
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { planYuvInput, QTensor, YuvInputQuantize, type YuvInputPlanOptions } from '@qtk/fixed-point';
import { Graph, GraphModule } from '@qtk/ir';
import { Module } from '@qtk/nn';
import { Generator, rand } from '@qtk/tensor';
import * as ort from 'onnxruntime-node';
import { afterAll, describe, expect, it } from 'vitest';
import { exportOnnxBytes, hasOwnModuleExport } from '@qtk/onnx';
import { expectOnnxCheckerPasses } from '../../../../scripts/onnx-checker.js';
import './yuv-input-rule.js';

const dir = mkdtempSync(join(tmpdir(), 'qtk-yuv-input-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** placeholder → YuvInputQuantize → output: the module's integers are the graph output. */
class Holder extends Module {
  forward(): never {
    throw new Error('only its graph runs');
  }
}

function yuvOnly(m: YuvInputQuantize): GraphModule {
  const root = new Holder();
  root.registerModule('quant', m);
  const g = new Graph();
  const x = g.placeholder('yuv');
  g.output(g.callModule('quant', [x]));
  return new GraphModule(root, g, { className: 'YuvInput' });
}

/** Random centered YUV bytes [n, 3, h, w], with the corners of the YUV cube in the first pixels. */
function yuvBytes(n: number, h: number, w: number, seed: number): QTensor {
  const v = rand([n * 3 * h * w], { low: -128, high: 128, generator: new Generator(seed) })
    .floor()
    .values();
  const plane = h * w;
  for (let k = 0; k < 8; k++) for (let c = 0; c < 3; c++) v[c * plane + k] = (k >> c) & 1 ? 127 : -128;
  return QTensor.fromInts(v, [n, 3, h, w], [1], 'qint8');
}

const CASES: YuvInputPlanOptions[] = [
  {
    swing: 'full',
    mean: [0.485, 0.456, 0.406],
    std: [0.229, 0.224, 0.225],
    scale: 1 / 48,
    dtype: 'qint8',
    rounding: 'half_up',
  },
  { swing: 'studio', order: 'bgr', mean: 0.5, std: 0.5, scale: 1 / 128, dtype: 'qint8', rounding: 'half_even' },
  {
    swing: 'full',
    mean: [0.485, 0.456, 0.406],
    std: [0.229, 0.224, 0.225],
    scale: 1 / 8192,
    dtype: 'qint16',
    rounding: 'half_up',
  },
  { swing: 'studio', mean: 0.45, std: 0.27, scale: 3e-5, dtype: 'qint16', rounding: 'half_even' },
];

describe('YuvInputQuantize integer ONNX export', () => {
  it('has an export rule of its own', () => {
    expect(hasOwnModuleExport(YuvInputQuantize)).toBe(true);
  });

  for (const [i, o] of CASES.entries()) {
    it(`gives QTK's integers in onnxruntime-node: ${o.swing} swing, ${o.order ?? 'rgb'}, ${o.dtype}, ${o.rounding}`, async (ctx) => {
      const m = new YuvInputQuantize(planYuvInput(o));
      const gm = yuvOnly(m);
      const x = yuvBytes(4, 64, 64, 10 + i); // 16384 pixels
      for (const opset of [11, 17, 21]) {
        const bytes = exportOnnxBytes(gm, x, { opset });
        if (opset === 17) {
          const path = join(dir, `yuv-${i}.onnx`);
          writeFileSync(path, bytes);
          await expectOnnxCheckerPasses(ctx, path);
        }
        const session = await ort.InferenceSession.create(bytes, {
          executionProviders: ['cpu'],
          logSeverityLevel: 3,
          intraOpNumThreads: 1,
          interOpNumThreads: 1,
        });
        const res = await session.run({
          yuv: new ort.Tensor('int8', Int8Array.from(x.ints()), [...x.shape]),
        });
        const got = res[session.outputNames[0]!]!;
        expect(got.type).toBe(o.dtype === 'qint8' ? 'int8' : 'int16');
        expect(got.dims).toEqual(x.shape);
        const want = m.call(x).ints();
        let differing = 0;
        const data = got.data as Int8Array | Int16Array;
        for (let k = 0; k < data.length; k++) if (data[k] !== want[k]) differing++;
        expect(differing).toBe(0);
        // and the values span the range (the test is not passing on a constant)
        expect(new Set(data).size).toBeGreaterThan(o.dtype === 'qint8' ? 150 : 5000);
      }
    });
  }
});
