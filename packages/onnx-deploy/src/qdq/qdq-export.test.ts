import '@qtk/march-bayes';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { calibrate, prepareQatFx, QatModule, startQat } from '@qtk/core';
import {
  defaultLsqQconfig,
  FakeQuantize,
  fakeQuantize,
  getDefaultCalibQconfig,
  getDefaultQatQconfig,
  getDefaultQconfig,
} from '@qtk/fake-quant';
import { fuseFx } from '@qtk/fusion';
import { symbolicTrace, type GraphModule } from '@qtk/ir';
import {
  Conv2d,
  ConvTranspose2d,
  DeQuantStub,
  LayerNorm,
  Linear,
  Module,
  QuantStub,
  ReLU6,
  Sigmoid,
  Softmax,
} from '@qtk/nn';
import { Generator, noGrad, randn, type Tensor } from '@qtk/tensor';
import * as ort from 'onnxruntime-node';
import { afterAll, describe, expect, it } from 'vitest';
import { exportOnnxBytes, OnnxExportError, DataType, decodeModel, type ModelMsg, readTensorProto } from '@qtk/onnx';
import { QDQ_SCALES_FORMAT, qdqScales, qdqScalesPath } from '../index.js';
import { exportOnnx } from '@qtk/onnx/node';
import { writeQdqScales } from '../node.js';
import { onnxCheck } from '@qtk/onnx/testing';
import { expectOnnxCheckerPasses, itWithOnnxChecker } from '../../../../scripts/onnx-checker.js';
import type { ConvBnReluNet } from '@qtk/test-models';
import { calibratedModel, randomBatches, smallConvNet, warmUp } from '../testing/qdq-models.js';

const dir = mkdtempSync(join(tmpdir(), 'qtk-qdq-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function runOrt(bytes: Uint8Array, x: Tensor): Promise<Float32Array> {
  const session = await ort.InferenceSession.create(bytes, {
    executionProviders: ['cpu'],
    graphOptimizationLevel: 'disabled',
    intraOpNumThreads: 1,
    interOpNumThreads: 1,
    logSeverityLevel: 3,
  });
  const input = new ort.Tensor('float32', Float32Array.from(x.values() as Float32Array), x.shape);
  const res = await session.run({ [session.inputNames[0]!]: input });
  return res[session.outputNames[0]!]!.data as Float32Array;
}

function ops(model: ModelMsg, op: string) {
  return (model.graph?.node ?? []).filter((n) => n.op_type === op);
}

function initializer(model: ModelMsg, name: string) {
  const t = model.graph?.initializer?.find((i) => i.name === name);
  if (!t) throw new Error(`no initializer '${name}'`);
  return t;
}

function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

const shape = [4, 3, 8, 8];

function smallNet(): ConvBnReluNet {
  const m = smallConvNet(1);
  warmUp(m, shape, 3);
  return m;
}

describe('a fused float model', () => {
  it('exports the fused conv + add + relu as Conv, Add, Relu with the BatchNorm absorbed, as QTK computes it', async () => {
    const gm = fuseFx(symbolicTrace(smallNet()), { march: 'bayes' });
    const x = randn(shape, { generator: new Generator(5) });
    const bytes = exportOnnxBytes(gm, x);
    const model = decodeModel(bytes);
    expect(ops(model, 'BatchNormalization')).toHaveLength(0);
    expect(ops(model, 'Conv')).toHaveLength(2);
    expect(ops(model, 'QuantizeLinear')).toHaveLength(0);
    expect(ops(model, 'Add').map((n) => n.name)).toEqual(['_generated_add_0_add']);
    const want = (noGrad(() => gm.call(x)) as Tensor).values();
    expect(maxAbsDiff(await runOrt(bytes, x), want)).toBeLessThan(1e-5);
  });
});

describe('a calibrated QAT model (bayes, int8)', () => {
  const gm = calibratedModel(smallNet(), randomBatches(shape, 3, 4), { march: 'bayes' });
  const x = randn(shape, { generator: new Generator(6) }).clamp(-1, 1);
  const path = join(dir, 'small-qdq.onnx');
  const bytes = exportOnnx(gm, x, path);
  const model = decodeModel(bytes);
  const qat = (p: string) => gm.getSubmodule(p) as QatModule;

  itWithOnnxChecker('passes onnx.checker', (python) => {
    expect(onnxCheck(python, path)).toBeNull();
  });

  it('puts QuantizeLinear → DequantizeLinear at every activation fake-quant and DequantizeLinear on every weight', () => {
    const fakeQuants = gm.modules().filter((m): m is FakeQuantize => m instanceof FakeQuantize);
    const weights = gm.modules().filter((m) => m instanceof QatModule && m.weightFakeQuant).length;
    // quant, conv1 (+relu), conv2 + add + relu, pool, fc: five activations; conv1, conv2, fc: three weights
    expect(fakeQuants).toHaveLength(8);
    expect(weights).toBe(3);
    expect(ops(model, 'QuantizeLinear')).toHaveLength(5);
    expect(ops(model, 'DequantizeLinear')).toHaveLength(8);
    for (const q of ops(model, 'QuantizeLinear')) {
      const zp = initializer(model, q.input![2]!);
      expect(zp.data_type).toBe(DataType.INT8);
      expect(zp.dims ?? []).toEqual([]);
      expect(readTensorProto(zp).numbers).toEqual([0]);
      expect(q.attribute ?? []).toEqual([]);
    }
  });

  it('writes each weight as its int8 integers, per channel (axis 0), dequantizing to exactly QTK fake-quantized weight', () => {
    const isInit = (name: string) => model.graph!.initializer!.some((i) => i.name === name);
    const weightDqs = ops(model, 'DequantizeLinear').filter((n) => isInit(n.input![0]!));
    expect(weightDqs.map((n) => n.output![0])).toEqual(['relu1.weight', '_generated_add_0.weight', 'fc.weight']);
    for (const dq of weightDqs) {
      const q = qat(dq.output![0]!.replace(/\.weight$/, ''));
      const fq = q.weightFakeQuant!;
      const layer = (q.module as { conv?: Module }).conv ?? q.module;
      const w = (layer as unknown as { weight: Tensor }).weight;
      const ints = initializer(model, dq.input![0]!);
      expect(ints.data_type).toBe(DataType.INT8);
      expect(ints.dims).toEqual(w.shape);
      expect(dq.attribute).toEqual([expect.objectContaining({ name: 'axis', i: 0 })]);
      const scale = readTensorProto(initializer(model, dq.input![1]!)).numbers;
      expect(scale).toEqual(Array.from(fq.scale.values()));
      const inner = w.size / w.shape[0]!;
      const deq = readTensorProto(ints).numbers.map((v, i) => Math.fround(v * scale[Math.floor(i / inner)]!));
      const want = fakeQuantize(w, fq.scale, {
        quantMin: fq.quantMin,
        quantMax: fq.quantMax,
        chAxis: 0,
        rounding: fq.rounding,
      });
      expect(deq).toEqual(Array.from(want.values()));
    }
  });

  it('runs in onnxruntime with the same output as QTK (graph optimizations off)', async () => {
    const want = (noGrad(() => gm.call(x)) as Tensor).values();
    expect(maxAbsDiff(await runOrt(bytes, x), want)).toBe(0);
  });

  it('has a scales sidecar keyed by the dequantized values, listing scale, zero point, dtype and axis', () => {
    const scales = writeQdqScales(bytes, qdqScalesPath(path));
    expect(JSON.parse(readFileSync(`${path}.scales.json`, 'utf8'))).toEqual(scales);
    expect(scales.format).toBe(QDQ_SCALES_FORMAT);
    expect(scales.version).toBe(1);
    expect(scales.opset).toBe(13);
    expect(Object.keys(scales.tensors)).toEqual([
      'quant',
      'relu1.weight',
      'relu1',
      '_generated_add_0.weight',
      '_generated_add_0',
      'pool',
      'fc.weight',
      'fc',
    ]);
    const fc = qat('fc');
    expect(scales.tensors.fc).toEqual({
      kind: 'activation',
      dtype: 'int8',
      scale: Array.from(fc.activationPostProcess!.scale.values()),
      zeroPoint: [0],
      axis: null,
      quantized: 'fc_quantized',
      source: 'fc_float',
    });
    expect(scales.tensors['fc.weight']).toEqual({
      kind: 'weight',
      dtype: 'int8',
      scale: Array.from(fc.weightFakeQuant!.scale.values()),
      zeroPoint: [0, 0, 0, 0, 0],
      axis: 0,
      quantized: 'fc.weight_quantized',
      source: null,
    });
    expect(scales.tensors.quant!.source).toBe('x');
  });
});

describe('fake-quants that only observe, and the model during export', () => {
  it('a model still calibrating (fake-quants observing) exports without QuantizeLinear, as the float fused model it computes', async (ctx) => {
    const gm = prepareQatFx(smallNet(), { global: getDefaultCalibQconfig() }, { march: 'bayes', onWarning: () => {} });
    const x = randn(shape, { generator: new Generator(7) });
    const path = join(dir, 'calibrating.onnx');
    const bytes = exportOnnx(gm, x, path);
    await expectOnnxCheckerPasses(ctx, path);
    const model = decodeModel(bytes);
    expect(ops(model, 'QuantizeLinear')).toHaveLength(0);
    expect(ops(model, 'DequantizeLinear')).toHaveLength(0);
    const want = (noGrad(() => gm.call(x)) as Tensor).values();
    expect(maxAbsDiff(await runOrt(bytes, x), want)).toBeLessThan(1e-5);
  });

  it('a model in the QAT state exports its current scales, whatever the example input, and is left unchanged', () => {
    const gm = calibratedModel(smallNet(), randomBatches(shape, 2, 8), { march: 'bayes' });
    startQat(gm);
    const before = snapshot(gm);
    const fqs = gm.modules().filter((m): m is FakeQuantize => m instanceof FakeQuantize);
    const a = qdqScales(exportOnnxBytes(gm, randn(shape, { generator: new Generator(9) })));
    const b = qdqScales(exportOnnxBytes(gm, randn(shape, { generator: new Generator(10) }).mul(5)));
    expect(b).toEqual(a);
    expect(a.tensors.relu1!.scale).toEqual(Array.from(qatScale(gm, 'relu1')));
    expect(fqs.every((f) => f.fakeQuantState === 'QAT')).toBe(true);
    expect(gm.training).toBe(true);
    expect(snapshot(gm)).toEqual(before);
  });

  it('an activation fake-quant that never saw data is an OnnxExportError naming it', () => {
    const gm = prepareQatFx(smallNet(), { global: getDefaultQatQconfig() }, { march: 'bayes', onWarning: () => {} });
    expect(() => exportOnnxBytes(gm, randn(shape, { generator: new Generator(11) }))).toThrowError(
      /activation fake-quant\(s\) have no scale yet \(quant\.activationPostProcess, relu1\.activationPostProcess.*calibrate/,
    );
  });
});

/** A copy of a model's state: every tensor's values and the extra states (observer statistics). */
function snapshot(m: Module): { tensors: Record<string, number[]>; extra: string } {
  const sd = m.stateDict();
  return {
    tensors: Object.fromEntries(Object.entries(sd.tensors).map(([k, t]) => [k, Array.from(t.values())])),
    extra: JSON.stringify(sd.extra ?? null),
  };
}

function qatScale(gm: GraphModule, path: string): Float32Array {
  return Float32Array.from((gm.getSubmodule(path) as QatModule).activationPostProcess!.scale.values());
}

describe('opsets and int16', () => {
  const gm16 = calibratedModel(smallNet(), randomBatches(shape, 3, 12), { march: 'bayes', dtype: 'qint16' });
  const x = randn(shape, { generator: new Generator(13) }).clamp(-1, 1);

  it('an int16 fake-quant below opset 21 is an OnnxExportError saying to pass { opset: 21 }', () => {
    const err = (() => {
      try {
        exportOnnxBytes(gm16, x, { opset: 17 });
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(OnnxExportError);
    expect((err as Error).message).toMatch(/fake-quant 'quant\.activationPostProcess' is qint16.*\{ opset: 21 \}/);
  });

  it('at opset 21, int16 activations have int16 zero points and run in onnxruntime within one int16 step of QTK', async () => {
    const bytes = exportOnnxBytes(gm16, x, { opset: 21 });
    const scales = qdqScales(bytes);
    expect(scales.opset).toBe(21);
    expect(scales.tensors.relu1!.dtype).toBe('int16');
    expect(scales.tensors['relu1.weight']!.dtype).toBe('int8');
    const model = decodeModel(bytes);
    expect(model.ir_version).toBe(10);
    for (const q of ops(model, 'QuantizeLinear'))
      expect(initializer(model, q.input![2]!).data_type).toBe(DataType.INT16);
    const want = (noGrad(() => gm16.call(x)) as Tensor).values();
    const step = qatScale(gm16, 'fc')[0]!;
    expect(maxAbsDiff(await runOrt(bytes, x), want)).toBeLessThanOrEqual(step * 1.0001);
  });

  it('per-channel weights below opset 13 are an OnnxExportError saying to pass { opset: 13 }', () => {
    const gm = calibratedModel(smallNet(), randomBatches(shape, 2, 14), { march: 'bayes' });
    expect(() => exportOnnxBytes(gm, x, { opset: 11 })).toThrowError(/relu1\.weightFakeQuant.*\{ opset: 13 \}/);
  });
});

/** ConvTranspose (weight channels on axis 1), ReLU6 fused, Linear on 3-d tokens (MatMul), a QAT sigmoid. */
class LayerKinds extends Module {
  readonly quant = new QuantStub();
  readonly conv = new Conv2d(2, 4, 3, { padding: 1, generator: new Generator(20) });
  readonly act = new ReLU6();
  readonly up = new ConvTranspose2d(4, 3, 2, { stride: 2, generator: new Generator(21) });
  readonly tokens = new Linear(8, 5, { generator: new Generator(22) });
  readonly sig = new Sigmoid();
  readonly dequant = new DeQuantStub();
  forward(x: Tensor): Tensor {
    const y = this.up.call(this.act.call(this.conv.call(this.quant.call(x))));
    return this.dequant.call(this.sig.call(this.tokens.call(y)));
  }
}

describe('other layer kinds and a narrowed range', () => {
  const xs = [2, 2, 4, 4];
  it('ConvTranspose (axis 1), fused ReLU6, Linear on a 3-d input and a sigmoid export and agree with QTK', async (ctx) => {
    const model = new LayerKinds();
    const x = randn(xs, { generator: new Generator(23) }).clamp(-1, 1);
    const gm = calibratedModel(model, randomBatches(xs, 3, 24), { march: 'bayes' });
    const path = join(dir, 'kinds.onnx');
    const bytes = exportOnnx(gm, x, path);
    await expectOnnxCheckerPasses(ctx, path);
    const scales = qdqScales(bytes);
    expect(scales.tensors['up.weight']!.axis).toBe(1);
    expect(scales.tensors['tokens.weight_t']!.axis).toBe(1);
    const m = decodeModel(bytes);
    expect(ops(m, 'ConvTranspose')).toHaveLength(1);
    expect(ops(m, 'MatMul')).toHaveLength(1);
    expect(ops(m, 'Clip').map((n) => n.name)).toEqual(['act_relu6']);
    const want = (noGrad(() => gm.call(x)) as Tensor).values();
    const got = await runOrt(bytes, x);
    expect(maxAbsDiff(got, want)).toBeLessThanOrEqual(qatScale(gm, 'sig')[0]! * 1.0001);
  });

  it('a reduce-range activation fake-quant clips to its range before QuantizeLinear and agrees with QTK', async () => {
    const model = new LayerKinds();
    const x = randn(xs, { generator: new Generator(25) }).mul(3);
    const gm = prepareQatFx(
      model,
      { global: getDefaultCalibQconfig({ calibQkwargs: { reduceRange: true } }) },
      { march: 'bayes', onWarning: () => {} },
    );
    calibrate(gm, randomBatches(xs, 3, 26), { onWarning: () => {} });
    const fq = (gm.getSubmodule('sig') as QatModule).activationPostProcess!;
    expect([fq.quantMin, fq.quantMax]).toEqual([-64, 63]);
    const bytes = exportOnnxBytes(gm, x);
    expect(ops(decodeModel(bytes), 'Clip').map((n) => n.name)).toContain('sig_clip');
    expect(qdqScales(bytes).tensors.sig).toMatchObject({ source: 'sig_float', quantized: 'sig_quantized' });
    const want = (noGrad(() => gm.call(x)) as Tensor).values();
    expect(maxAbsDiff(await runOrt(bytes, x), want)).toBeLessThanOrEqual(fq.scale.values()[0]! * 1.0001);
  });
});

/** Tokens through a LayerNorm, a Linear and a Softmax: both composites on bayes, with int16 steps. */
class Attentionish extends Module {
  readonly quant = new QuantStub();
  readonly norm = new LayerNorm(8);
  readonly proj = new Linear(8, 6, { generator: new Generator(30) });
  readonly sm = new Softmax({ dim: -1 });
  readonly dequant = new DeQuantStub();
  forward(x: Tensor): Tensor {
    return this.dequant.call(this.sm.call(this.proj.call(this.norm.call(this.quant.call(x)))));
  }
}

describe('composite QAT forms (bayes softmax and layer norm)', () => {
  const xs = [4, 5, 8];
  const gm = calibratedModel(new Attentionish(), randomBatches(xs, 3, 31), { march: 'bayes' });
  const x = randn(xs, { generator: new Generator(32) }).clamp(-1, 1);

  it('their int16 steps need opset 21, and the error says so', () => {
    expect(() => exportOnnxBytes(gm, x)).toThrowError(
      /fake-quant 'norm\.module\.\w+_fake_quant' is qint16.*\{ opset: 21 \}/,
    );
  });

  it('export every step with its QDQ and agree with QTK in onnxruntime', async () => {
    const bytes = exportOnnxBytes(gm, x, { opset: 21 });
    const scales = qdqScales(bytes);
    const int16 = Object.entries(scales.tensors)
      .filter(([, t]) => t.dtype === 'int16')
      .map(([k]) => k);
    expect(int16).toEqual([
      'norm_float_mean',
      'norm_float_sub',
      'norm_float_square',
      'norm_float_variance',
      'norm_float_rsqrt',
      'norm_float_normalized',
      'sm_float_sub',
      'sm_float_exp',
      'sm_float_sum',
      'sm_float_reciprocal',
    ]);
    const m = decodeModel(bytes);
    expect(ops(m, 'ReduceMax')).toHaveLength(1);
    expect(ops(m, 'ReduceMean')).toHaveLength(2);
    const want = (noGrad(() => gm.call(x)) as Tensor).values();
    expect(maxAbsDiff(await runOrt(bytes, x), want)).toBeLessThanOrEqual(qatScale(gm, 'sm')[0]! * 1.0001);
  });
});

describe('per-tensor weights', () => {
  it('write a scalar scale without an axis, so the model exports at opset 11 too, and agree with QTK', async (ctx) => {
    const xs = [2, 2, 4, 4];
    const qc = getDefaultQconfig(
      'fake_quant',
      'fake_quant',
      'min_max',
      'min_max',
      { state: 'CALIBRATION' },
      { qscheme: 'per_tensor_symmetric', state: 'CALIBRATION' },
    );
    const gm = prepareQatFx(new LayerKinds(), { global: qc }, { march: 'bayes', onWarning: () => {} });
    calibrate(gm, randomBatches(xs, 3, 40), { onWarning: () => {} });
    const x = randn(xs, { generator: new Generator(41) }).clamp(-1, 1);
    const path = join(dir, 'per-tensor.onnx');
    const bytes = exportOnnx(gm, x, path, { opset: 11 });
    await expectOnnxCheckerPasses(ctx, path);
    const scales = qdqScales(bytes);
    for (const w of ['act.weight', 'up.weight', 'tokens.weight_t'])
      expect(scales.tensors[w], w).toMatchObject({ kind: 'weight', axis: null, zeroPoint: [0] });
    const want = (noGrad(() => gm.call(x)) as Tensor).values();
    expect(maxAbsDiff(await runOrt(bytes, x), want)).toBeLessThanOrEqual(qatScale(gm, 'sig')[0]! * 1.0001);
  });
});

describe('learned scales (LSQ)', () => {
  it('export the learned scale and agree with QTK', async () => {
    const gm = prepareQatFx(smallNet(), { global: defaultLsqQconfig }, { march: 'bayes', onWarning: () => {} });
    calibrate(gm, randomBatches(shape, 2, 50), { onWarning: () => {} });
    const relu1 = (gm.getSubmodule('relu1') as QatModule).activationPostProcess!;
    expect(relu1.kind).toBe('lsq');
    relu1.scale.data[relu1.scale.offset] = Math.fround(relu1.scale.values()[0]! * 1.25); // as if training moved it
    const x = randn(shape, { generator: new Generator(51) }).clamp(-1, 1);
    const bytes = exportOnnxBytes(gm, x);
    expect(qdqScales(bytes).tensors.relu1!.scale).toEqual([relu1.scale.values()[0]]);
    const want = (noGrad(() => gm.call(x)) as Tensor).values();
    expect(maxAbsDiff(await runOrt(bytes, x), want)).toBeLessThanOrEqual(qatScale(gm, 'fc')[0]! * 1.0001);
  });
});
