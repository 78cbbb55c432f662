import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { modelFromBytes, modelToBytes } from '@qtk/core';
import { QTensor } from '@qtk/fixed-point';
import { type GraphModule, runSegments, splitModel, symbolicTrace } from '@qtk/ir';
import { exportOnnxBytes } from '@qtk/onnx';
import '@qtk/onnx-deploy'; // the integer export rules of the fixed-point segments
import { expectOnnxCheckerPasses } from '../../scripts/onnx-checker.js';
import * as ort from 'onnxruntime-node';
import { hybridPartitioner } from '@qtk/hybrid';
import '@qtk/march-bayes';
import '@qtk/march-bernoulli2';
import { QuantStub } from '@qtk/nn';
import { Generator, noGrad, rand, randn, Tensor } from '@qtk/tensor';
import { afterAll, describe, expect, it } from 'vitest';
import { postTrainingQuantize } from './ptq.js';
import { MobileHybridNet } from './mobile-hybrid-net.js';
import { ReferenceNet } from './reference-net.js';

/**
 * The reference network with a QuantStub where its second stage starts (horizon_plugin_pytorch's
 * segmented-deployment recipe): with an observed scale it sees what layer2's output saw (the
 * integers pass through), with a fixed one it requantizes them.
 */
class TwoStageNet extends ReferenceNet {
  readonly stage2: QuantStub;
  constructor(generator: Generator, stage2Scale?: number) {
    super({ generator });
    this.stage2 = new QuantStub(stage2Scale === undefined ? {} : { scale: stage2Scale });
  }
  override forward(x: Tensor): Tensor {
    let y = this.stem.call(this.quant.call(x));
    y = this.stage2.call(this.layer2.call(this.layer1.call(y)));
    y = this.flatten.call(this.pool.call(this.layer3.call(y)));
    return this.dequant.call(this.fc.call(y));
  }
}

const images = (n: number, seed: number): Tensor[] => {
  const g = new Generator(seed);
  return Array.from({ length: n }, () => rand([4, 1, 28, 28], { generator: g }).mul(2).sub(1));
};

/**
 * Cut inside layer1 (its shortcut, stem_2, crosses the cut), after layer2 (the next segment starts
 * with the stage2 QuantStub) and inside layer3 (its shortcut, stage2's output, crosses).
 */
const CUTS = ['layer1_relu1', 'layer2__generated_add_0', 'layer3_relu1'];

const bits = (t: unknown) => Array.from((t as Tensor).values());
const call = (m: GraphModule, ...a: unknown[]) =>
  noGrad(() => (m as unknown as { call(...v: unknown[]): unknown }).call(...a));

describe('segmented deployment of the reference network (splitModel)', () => {
  for (const [march, stage2Scale] of [
    ['bayes', undefined],
    ['bernoulli2', 0.05],
  ] as const) {
    it(`${march}, stage2 ${stage2Scale ? 'requantizing' : 'passing through'}: the fixed-point segments chained equal the whole fixed-point model bit for bit, also after saving each as a model file`, () => {
      const float = new TwoStageNet(new Generator(2), stage2Scale);
      const { calibrated, fixedPoint } = postTrainingQuantize(float, { march, calibration: images(2, 1) });
      const stub = fixedPoint.getSubmodule('stage2') as unknown as { output: { scale: number } | null };
      expect(stub.output?.scale ?? null).toBe(stage2Scale === undefined ? null : Math.fround(stage2Scale));
      const segments = splitModel(fixedPoint, { at: CUTS });
      expect(segments.map((s) => s.inputNames)).toEqual([
        ['x'],
        ['layer1_relu1', 'stem_2'],
        ['layer2__generated_add_0'],
        ['layer3_relu1', 'stage2'],
      ]);
      const reloaded = segments.map((s) => modelFromBytes(modelToBytes(s)));
      for (const [k, r] of reloaded.entries()) {
        expect(r.kind).toBe('fixed-point');
        expect(r.march).toBe(march);
        expect(r.model.meta.segment).toEqual(segments[k]!.meta.segment);
      }
      for (const x of images(3, 7)) {
        const want = bits(call(fixedPoint, x));
        // the values handed over inside the quantized region are integers with their scales
        const handed = call(segments[0]!, x) as unknown[];
        expect(handed).toHaveLength(2);
        for (const v of handed) {
          expect(v).toBeInstanceOf(QTensor);
          expect((v as QTensor).dtype).toBe('qint8');
        }
        expect(bits(runSegments(segments, [x]))).toEqual(want);
        expect(
          bits(
            runSegments(
              reloaded.map((r) => r.model),
              [x],
            ),
          ),
        ).toEqual(want);
      }
      // the calibrated (fake-quant) model splits at the same names and chains exactly too
      const qatSegments = splitModel(calibrated, { at: CUTS });
      for (const x of images(2, 8)) {
        expect(bits(noGrad(() => runSegments(qatSegments, [x])))).toEqual(bits(call(calibrated, x)));
      }
      expect(qatSegments[3]!.meta).toMatchObject({ kind: 'qat', march });
      const qatReloaded = modelFromBytes(modelToBytes(qatSegments[1]!));
      expect(qatReloaded.kind).toBe('qat');
      const [a, b] = call(qatSegments[0]!, images(1, 9)[0]!) as Tensor[];
      expect(bits(call(qatReloaded.model, a, b))).toEqual(bits(call(qatSegments[1]!, a, b)));
    });
  }
});

describe('segmented deployment of a heterogeneous model', () => {
  it('bernoulli2 hybrid: BPU stage, CPU stage, BPU stage chain to the whole model bit for bit', () => {
    const calibration = images(2, 1);
    const { fixedPoint } = postTrainingQuantize(new MobileHybridNet({ generator: new Generator(5) }), {
      march: 'bernoulli2',
      calibration,
      prepare: { hybrid: true, partitioner: hybridPartitioner },
    });
    // inside the backbone (the stem's output crosses to the cat), where the BPU part hands a
    // dequantized float to the CPU hardswish of block 2's depthwise conv, and after it
    const segments = splitModel(fixedPoint, {
      at: ['block1_project_1', '_generated_dequantize_4', 'block2_depthwise_2'],
    });
    expect(segments.map((s) => s.inputNames)).toEqual([
      ['x'],
      ['block1_project_1', '_generated_stem_2_float_boundary_0'],
      ['_generated_dequantize_4', '_generated_stem_2_float_boundary_0'],
      ['block2_depthwise_2', '_generated_stem_2_float_boundary_0'],
    ]);
    for (const x of images(2, 11)) {
      const handed1 = call(segments[0]!, x) as unknown[];
      expect(handed1.every((v) => v instanceof QTensor)).toBe(true);
      const handed2 = call(segments[1]!, ...handed1) as unknown[];
      // the CPU stage takes and returns float tensors
      expect(handed2[0]).toBeInstanceOf(Tensor);
      expect(handed2[0]).not.toBeInstanceOf(QTensor);
      const handed3 = call(segments[2]!, ...handed2) as unknown[];
      expect((handed3[0] as Tensor).dtype).toBe('float32');
      expect(bits(call(segments[3]!, ...handed3))).toEqual(bits(call(fixedPoint, x)));
    }
  });
});

async function ortSession(bytes: Uint8Array): Promise<ort.InferenceSession> {
  return ort.InferenceSession.create(bytes, {
    executionProviders: ['cpu'],
    intraOpNumThreads: 1,
    interOpNumThreads: 1,
  });
}

const toOrt = (t: Tensor) => new ort.Tensor('float32', Float32Array.from(t.values()), t.shape);
const fromOrt = (o: ort.Tensor) => new Tensor({ data: o.data as Float32Array, shape: [...o.dims], dtype: 'float32' });
const maxDiff = (a: Tensor, b: Tensor) => Math.max(...Array.from(a.values(), (v, i) => Math.abs(v - b.values()[i]!)));

const dir = mkdtempSync(join(tmpdir(), 'qtk-segments-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('segments of a float model export to ONNX', () => {
  const float = new TwoStageNet(new Generator(3));
  float.train();
  noGrad(() => float.call(randn([8, 1, 28, 28], { generator: new Generator(1) }))); // non-trivial BN statistics
  float.eval();
  const gm = symbolicTrace(float);
  // twice inside layer1 (stem_2 crosses both cuts, so segment 1 hands it on untouched), after
  // layer2, inside layer3 (stage2 crosses)
  const segments = splitModel(gm, { at: ['layer1_relu1', 'layer1_bn2', 'layer2_relu2', 'layer3_relu1'] });
  const x = randn([2, 1, 28, 28], { generator: new Generator(4) });

  it('each segment exports with its handed-over values as inputs; onnxruntime-node runs the chain within 1e-5 of QTK', async (ctx) => {
    expect(segments[1]!.meta.segment).toMatchObject({
      inputs: ['layer1_relu1', 'stem_2'],
      outputs: ['layer1_bn2', 'stem_2'],
    });
    let qtkValues: Tensor[] = [x];
    let ortValues: Tensor[] = [x];
    for (const [k, seg] of segments.entries()) {
      const last = k === segments.length - 1;
      const bytes = exportOnnxBytes(seg, qtkValues);
      const path = join(dir, `segment${k}.onnx`);
      writeFileSync(path, bytes);
      await expectOnnxCheckerPasses(ctx, path);
      const session = await ortSession(bytes);
      expect(session.inputNames).toEqual([...seg.inputNames]);
      const want = noGrad(() => (seg as unknown as { call(...a: Tensor[]): unknown }).call(...qtkValues));
      const wantList = (last ? [want] : want) as Tensor[];
      const feeds = Object.fromEntries(session.inputNames.map((n, i) => [n, toOrt(ortValues[i]!)]));
      const res = await session.run(feeds);
      const got = session.outputNames.map((n) => fromOrt(res[n]!));
      expect(got).toHaveLength(wantList.length);
      // ORT on its own chain of values agrees with QTK's chain
      got.forEach((g, i) => {
        expect(g.shape).toEqual(wantList[i]!.shape);
        expect(maxDiff(g, wantList[i]!)).toBeLessThan(1e-5);
      });
      qtkValues = wantList;
      ortValues = got;
    }
    const whole = noGrad(() => gm.call(x)) as Tensor;
    expect(Array.from(qtkValues[0]!.values())).toEqual(Array.from(whole.values()));
    expect(maxDiff(ortValues[0]!, whole)).toBeLessThan(1e-5);
  });

  // Each fixed-point segment's integer ONNX, fed the integers QTK hands over, reproduces the segment's integers
  // exactly in onnxruntime-node.
  it('each fixed-point segment exports to integer ONNX that onnxruntime-node runs bit for bit', async () => {
    const { fixedPoint } = postTrainingQuantize(new TwoStageNet(new Generator(2), 0.05), {
      march: 'bernoulli2',
      calibration: images(2, 1),
    });
    const fixedSegments = splitModel(fixedPoint, { at: CUTS });
    const storage = (v: unknown) => (v instanceof QTensor ? v.data : (v as Tensor));
    let values: unknown[] = [images(1, 5)[0]!];
    for (const [k, seg] of fixedSegments.entries()) {
      const last = k === fixedSegments.length - 1;
      const session = await ortSession(exportOnnxBytes(seg, values as Tensor[]));
      const out = call(seg, ...values);
      const outs = (last ? [out] : out) as unknown[];
      const feeds = Object.fromEntries(
        session.inputNames.map((n, i) => {
          const t = storage(values[i]);
          return [n, new ort.Tensor(t.dtype === 'float32' ? 'float32' : t.dtype, t.data as Float32Array, t.shape)];
        }),
      );
      const res = await session.run(feeds);
      session.outputNames.forEach((n, i) => {
        expect(Array.from(res[n]!.data as ArrayLike<number>)).toEqual(Array.from(storage(outs[i]).values()));
      });
      values = outs;
    }
  });
});
