import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { symbolicTrace } from '@qtk/ir';
import {
  AvgPool2d,
  BatchNorm2d,
  Conv1d,
  Conv2d,
  Conv3d,
  ConvTranspose2d,
  FloatFunctional,
  GELU,
  Hardswish,
  LayerNorm,
  LeakyReLU,
  Linear,
  MaxPool2d,
  Module,
  PixelUnshuffle,
  PReLU,
  ReLU6,
  Sigmoid,
  SiLU,
  Softmax,
  Upsample,
} from '@qtk/nn';
import { Generator, type Tensor, cat, mean, randn, reshape, permute } from '@qtk/tensor';
import * as ort from 'onnxruntime-node';
import { OnnxExportError, exportOnnxBytes } from './index.js';
import { exportOnnx, importOnnx } from './node.js';
import { onnxCheck } from './testing/python-onnx.js';
import { expectOnnxCheckerPasses, itWithOnnxChecker } from '../../../scripts/onnx-checker.js';

const dir = mkdtempSync(join(tmpdir(), 'qtk-onnx-ops-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A model touching most exportable layers and functional ops. */
class Zoo extends Module {
  readonly conv = new Conv2d(3, 8, 3, { padding: 1, generator: new Generator(1) });
  readonly bn = new BatchNorm2d(8);
  readonly act = new ReLU6();
  readonly pool = new MaxPool2d(2);
  readonly up = new ConvTranspose2d(8, 4, 2, { stride: 2, generator: new Generator(2) });
  readonly prelu = new PReLU({ numParameters: 4, init: 0.1 });
  readonly skip = new FloatFunctional();
  readonly conv2 = new Conv2d(4, 4, 3, { padding: 1, groups: 2, generator: new Generator(3) });
  readonly hs = new Hardswish();
  readonly avg = new AvgPool2d(2, { stride: 2 });
  readonly near = new Upsample({ scaleFactor: 2, mode: 'nearest' });
  readonly lrelu = new LeakyReLU({ negativeSlope: 0.2 });
  readonly norm = new LayerNorm(16);
  readonly tokens = new Linear(16, 6, { generator: new Generator(4) });
  readonly head = new Linear(6, 3, { generator: new Generator(5) });
  readonly sig = new Sigmoid();
  readonly sm = new Softmax({ dim: -1 });

  forward(x: Tensor): Tensor {
    let y = this.pool.call(this.act.call(this.bn.call(this.conv.call(x))));
    y = this.prelu.call(this.up.call(y));
    y = this.skip.add(y, this.hs.call(this.conv2.call(y)));
    y = this.lrelu.call(this.near.call(this.avg.call(y)));
    y = cat([y, y.mul(0.5)], 1);
    const n = y.shape[0]!;
    const t = permute(reshape(y, [n, 8, 256]), [0, 2, 1]).contiguous();
    const s = this.tokens.call(this.norm.call(reshape(t, [n, 128, 16])));
    return this.sm.call(this.head.call(this.sig.call(mean(s, 1))));
  }
}

describe('export of layers and functional ops', () => {
  const model = new Zoo();
  model.train();
  model.call(randn([4, 3, 16, 16], { generator: new Generator(6) }));
  model.eval();
  const gm = symbolicTrace(model);
  const x = randn([2, 3, 16, 16], { generator: new Generator(7) });
  const path = join(dir, 'zoo.onnx');
  exportOnnx(gm, [x], path, { opset: 17 });

  it('re-imports to the same outputs', () => {
    for (const batch of [2, 3]) {
      const xb = randn([batch, 3, 16, 16], { generator: new Generator(batch) });
      const want = gm.call(xb) as Tensor;
      const got = importOnnx(path).call(xb) as Tensor;
      expect(got.shape).toEqual([batch, 3]);
      const w = want.values() as Float32Array;
      (got.values() as Float32Array).forEach((v, i) => {
        expect(Math.abs(v - w[i]!)).toBeLessThan(1e-6);
      });
    }
  });

  itWithOnnxChecker('passes onnx.checker', (python) => {
    expect(onnxCheck(python, path)).toBeNull();
  });

  it('runs in onnxruntime-node within 1e-4 of QTK, at another batch size too', async () => {
    const session = await ort.InferenceSession.create(path, {
      executionProviders: ['cpu'],
      intraOpNumThreads: 1,
      interOpNumThreads: 1,
    });
    for (const batch of [2, 5]) {
      const xb = randn([batch, 3, 16, 16], { generator: new Generator(30 + batch) });
      const want = gm.call(xb) as Tensor;
      const res = await session.run({
        x: new ort.Tensor('float32', Float32Array.from(xb.values() as Float32Array), xb.shape),
      });
      const got = res.output!.data as Float32Array;
      (want.values() as Float32Array).forEach((v, i) => {
        expect(Math.abs(v - got[i]!)).toBeLessThan(1e-4);
      });
    }
  });
});

class Convs extends Module {
  readonly c1 = new Conv1d(2, 4, 3, { padding: 2, dilation: 2, generator: new Generator(11) });
  readonly c3 = new Conv3d(2, 4, [3, 1, 3], {
    stride: [1, 2, 1],
    padding: [1, 0, 1],
    groups: 2,
    generator: new Generator(12),
  });

  forward(a: Tensor, v: Tensor): Tensor[] {
    return [this.c1.call(a), this.c3.call(v)];
  }
}

describe('1-d and 3-d convolutions, two inputs and two outputs', () => {
  it('export, run in onnxruntime-node and import back as Conv1d / Conv3d', async (ctx) => {
    const gm = symbolicTrace(new Convs());
    const a = randn([2, 2, 9], { generator: new Generator(13) });
    const v = randn([2, 2, 4, 5, 6], { generator: new Generator(14) });
    const path = join(dir, 'convs.onnx');
    exportOnnx(gm, [a, v], path, { outputNames: ['y1', 'y3'] });
    await expectOnnxCheckerPasses(ctx, path);
    const [w1, w3] = gm.call(a, v) as Tensor[];
    const back = importOnnx(path);
    expect(back.getSubmodule('c1')).toBeInstanceOf(Conv1d);
    expect(back.getSubmodule('c3')).toBeInstanceOf(Conv3d);
    const [g1, g3] = back.call(a, v) as Tensor[];
    expect(Array.from(g1!.values())).toEqual(Array.from(w1!.values()));
    expect(Array.from(g3!.values())).toEqual(Array.from(w3!.values()));
    const session = await ort.InferenceSession.create(path, {
      executionProviders: ['cpu'],
      intraOpNumThreads: 1,
      interOpNumThreads: 1,
    });
    const feed = (t: Tensor) => new ort.Tensor('float32', Float32Array.from(t.values() as Float32Array), t.shape);
    const res = await session.run({ a: feed(a), v: feed(v) });
    for (const [name, want] of [
      ['y1', w1!],
      ['y3', w3!],
    ] as const) {
      const got = res[name]!.data as Float32Array;
      expect(res[name]!.dims).toEqual(want.shape);
      (want.values() as Float32Array).forEach((x, i) => {
        expect(Math.abs(x - got[i]!)).toBeLessThan(1e-4);
      });
    }
  });
});

describe('export errors', () => {
  class WithUnshuffle extends Module {
    readonly fc = new Linear(16, 16, { generator: new Generator(1) });
    readonly act = new PixelUnshuffle(2);
    forward(x: Tensor): Tensor {
      return this.act.call(reshape(this.fc.call(x), [2, 1, 4, 4]));
    }
  }
  it('names the module that has no ONNX form, and checks the example inputs and names', () => {
    const gm = symbolicTrace(new WithUnshuffle());
    expect(() => exportOnnxBytes(gm, [randn([2, 16])])).toThrow(OnnxExportError);
    expect(() => exportOnnxBytes(gm, [randn([2, 16])])).toThrow("module 'act' (PixelUnshuffle) has no ONNX form yet");
    expect(() => exportOnnxBytes(gm, [randn([2, 16]), randn([2, 16])])).toThrow('takes 1 inputs, got 2 example inputs');
    expect(() => exportOnnxBytes(gm, [randn([2, 16])], { outputNames: ['a', 'b'] })).toThrow(
      '1 outputs, got 2 outputNames',
    );
    expect(() => exportOnnxBytes(gm, [randn([2, 16])], { opset: 10 })).toThrow('opset must be 11 to 21');
  });
});

describe('GELU and SiLU (float)', () => {
  class Activations extends Module {
    readonly fc = new Linear(8, 8, { generator: new Generator(2) });
    readonly gelu = new GELU();
    readonly silu = new SiLU();
    readonly geluTanh = new GELU({ approximate: 'tanh' });
    forward(x: Tensor): Tensor {
      return this.geluTanh.call(this.silu.call(this.gelu.call(this.fc.call(x))));
    }
  }
  it('export as erf / tanh and sigmoid forms that onnxruntime runs to QTK float, and import back as the modules', async () => {
    const net = new Activations();
    net.eval();
    const gm = symbolicTrace(net);
    const x = randn([4, 8], { std: 2, generator: new Generator(3) });
    const bytes = exportOnnxBytes(gm, [x]);
    const session = await ort.InferenceSession.create(bytes);
    const out = await session.run({
      [session.inputNames[0]!]: new ort.Tensor('float32', x.values() as Float32Array, [4, 8]),
    });
    const got = out[session.outputNames[0]!]!.data as Float32Array;
    const want = (gm.call(x) as Tensor).values();
    for (let i = 0; i < want.length; i++)
      expect(Math.abs(got[i]! - want[i]!)).toBeLessThan(1e-5 * (1 + Math.abs(want[i]!)));
    const back = importOnnx(bytes);
    const kinds = [...back.graph.nodes]
      .filter((n) => n.op === 'call_module')
      .map((n) => back.getSubmodule(n.target).constructor.name);
    expect(kinds).toEqual(['Linear', 'GELU', 'SiLU', 'GELU']);
    const approx = [...back.graph.nodes]
      .filter((n) => n.op === 'call_module')
      .map((n) => (back.getSubmodule(n.target) as { approximate?: string }).approximate);
    expect([approx[1], approx[3]]).toEqual(['none', 'tanh']);
  });
});
