// bayes composites: the QAT form against the float op, and the fixed-point model against the QAT form.
import '@qtk/march-bayes';
import '@qtk/march-bernoulli2';
import {
  defaultQatQconfig,
  defaultQat16bitQconfig,
  type FakeQuantize,
  setFakeQuantize,
  type QConfig,
} from '@qtk/fake-quant';
import { FixedLayerNorm, FixedSoftmax } from '@qtk/fixed-point';
import { DeQuantStub, LayerNorm, Module, QuantStub, Softmax } from '@qtk/nn';
import { div, Generator, layerNorm, noGrad, rand, randn, softmax, type Tensor } from '@qtk/tensor';
import { afterEach, describe, expect, it } from 'vitest';
import { ConversionError } from './convert-fx.js';
import {
  calibrate,
  convertFx,
  LayerNormQat,
  prepareQatFx,
  type QatModule,
  resetMarch,
  setMarch,
  SoftmaxQat,
} from './index.js';
import { calibratedQat, callModel, maxSteps, thrownBy } from './testing/convert-harness.js';
import { SingleOpNet } from '@qtk/test-models';

const g = new Generator(Number(process.env.QTK_SEED ?? 5));

interface Result {
  /** max |QAT − float|, in output steps */
  qatVsFloat: number;
  /** max |fixed − QAT|, in output steps */
  fixedVsQat: number;
}

function run(
  op: Module,
  shape: number[],
  std: number,
  qconfig: QConfig,
  floatOp: (x: Tensor) => Tensor,
  fixedClass: typeof FixedSoftmax | typeof FixedLayerNorm,
): Result {
  setMarch('bayes');
  // calibrated on the input compared, so no observed range clips it (the comparison measures the
  // composite's arithmetic, not calibration coverage)
  const x = randn(shape, { std, generator: g });
  const gm = calibratedQat(new SingleOpNet(op), { global: qconfig }, [x]);
  const fx = convertFx(gm, { onWarning: () => {} });
  const fixed = fx.modules().find((m) => m instanceof fixedClass) as FixedSoftmax | FixedLayerNorm | undefined;
  expect(fixed).toBeDefined();
  const step = fixed!.config.outScale;
  return noGrad(() => {
    const yq = callModel(gm, x);
    const yf = callModel(fx, x);
    // rounded to 1e-3: float32 dequantization adds ~1e-6 steps
    const r3 = (v: number) => Math.round(v * 1000) / 1000;
    return { qatVsFloat: r3(maxSteps(yq, floatOp(x), step)), fixedVsQat: r3(maxSteps(yf, yq, step)) };
  });
}

afterEach(() => resetMarch());

// Measured over seeds 1–8 (QTK_SEED, QTK_MEASURE=1 prints; docs/march-numerics.md, "Composites (bayes)"):
// softmax fixed−QAT ≤ 1 int8 / 5 int16 steps, QAT−float ≤ 2.7 / 4.7; layernorm fixed−QAT ≤ 1 / 3,
// QAT−float ≤ 1.5 / 2.4; div fixed−QAT 0 / 8.
describe('bayes composites', () => {
  it('prepare gives Softmax and LayerNorm their composite QAT forms on bayes, with qint16 intermediates', () => {
    setMarch('bayes');
    const gm = prepareQatFx(new SingleOpNet(new Softmax(-1)), { global: defaultQatQconfig });
    const qat = gm.getSubmodule('op') as QatModule;
    expect(qat.module).toBeInstanceOf(SoftmaxQat);
    expect(Object.values((qat.module as SoftmaxQat<FakeQuantize>).steps).map((s) => s.dtype)).toEqual([
      'qint16',
      'qint16',
      'qint16',
      'qint16',
    ]);
    expect(qat.activationPostProcess!.dtype).toBe('qint8');
    const gm2 = prepareQatFx(new SingleOpNet(new LayerNorm(32)), { global: defaultQatQconfig });
    expect((gm2.getSubmodule('op') as QatModule).module).toBeInstanceOf(LayerNormQat);
  });

  it('softmax over 10–64 elements: QAT close to float, fixed point within 1 (int8) / 6 (int16) output steps of QAT', () => {
    for (const n of [10, 32, 64]) {
      for (const [qc, label] of [
        [defaultQatQconfig, 'int8'],
        [defaultQat16bitQconfig, 'int16'],
      ] as const) {
        const r = run(new Softmax(-1), [16, n], 3, qc, (x) => softmax(x, -1), FixedSoftmax);
        if (process.env.QTK_MEASURE)
          console.log(
            `MEASURE softmax n=${n} ${label}: qat-float ${r.qatVsFloat.toFixed(2)} fixed-qat ${r.fixedVsQat.toFixed(2)}`,
          );
        if (!process.env.QTK_MEASURE) {
          expect(r.qatVsFloat, `softmax ${n} ${label}`).toBeLessThanOrEqual(label === 'int8' ? 3 : 6);
          expect(r.fixedVsQat, `softmax ${n} ${label}`).toBeLessThanOrEqual(label === 'int8' ? 1 : 6);
        }
      }
    }
  });

  it('layernorm over 32–64 features, with and without affine: QAT close to float, fixed point within the bound', () => {
    for (const d of [32, 64]) {
      for (const affine of [true, false]) {
        for (const [qc, label] of [
          [defaultQatQconfig, 'int8'],
          [defaultQat16bitQconfig, 'int16'],
        ] as const) {
          const ln = new LayerNorm(d, { elementwiseAffine: affine });
          if (ln.weight) ln.weight.data.set(randn([d], { std: 0.5, mean: 1, generator: g }).values());
          if (ln.bias) ln.bias.data.set(randn([d], { std: 0.3, generator: g }).values());
          const floatOp = (x: Tensor) => layerNorm(x, [d], ln.weight, ln.bias, ln.eps);
          const r = run(ln, [2, 8, d], 2, qc, floatOp, FixedLayerNorm);
          if (process.env.QTK_MEASURE)
            console.log(
              `MEASURE layernorm d=${d} affine=${affine} ${label}: qat-float ${r.qatVsFloat.toFixed(2)} fixed-qat ${r.fixedVsQat.toFixed(2)}`,
            );
          if (!process.env.QTK_MEASURE) {
            expect(r.qatVsFloat, `layernorm ${d} ${label}`).toBeLessThanOrEqual(label === 'int8' ? 2 : 3);
            expect(r.fixedVsQat, `layernorm ${d} ${label}`).toBeLessThanOrEqual(label === 'int8' ? 1 : 4);
          }
        }
      }
    }
  });

  it('div = x · reciprocal(y): prepare decomposes it with a qint16 reciprocal; fixed point within the bound of the QAT model', () => {
    class DivNet extends Module {
      readonly qx = new QuantStub();
      readonly qy = new QuantStub();
      readonly dequant = new DeQuantStub();
      forward(x: Tensor, y: Tensor): Tensor {
        return this.dequant.call(div(this.qx.call(x), this.qy.call(y)));
      }
    }
    for (const [qc, label] of [
      [defaultQatQconfig, 'int8'],
      [defaultQat16bitQconfig, 'int16'],
    ] as const) {
      setMarch('bayes');
      const gm = prepareQatFx(new DivNet(), { global: qc });
      const targets = gm.graph.nodes.map((n) => n.target);
      expect(targets).toContain('reciprocal');
      expect(targets).not.toContain('div');
      const x = randn([8, 32], { std: 2, generator: g });
      const y = rand([8, 32], { low: 0.25, high: 4, generator: g });
      calibrate(gm, [[x, y]]);
      setFakeQuantize(gm, 'VALIDATION');
      const fx = convertFx(gm, { onWarning: () => {} });
      const dq = gm.graph.nodes.find((n) => n.target === 'dequant')!;
      const step = (gm.getSubmodule((dq.args[0] as { target: string }).target) as FakeQuantize).calculateQparams()
        .scale[0]!;
      noGrad(() => {
        const yq = callModel(gm, x, y);
        const yf = callModel(fx, x, y);
        const steps = Math.round(maxSteps(yf, yq, step) * 1000) / 1000;
        const vsFloat = maxSteps(yq, div(x, y), 1);
        if (process.env.QTK_MEASURE) console.log(`MEASURE div ${label}: fixed-qat ${steps} qat-float ${vsFloat}`);
        if (!process.env.QTK_MEASURE) expect(steps, `div ${label}`).toBeLessThanOrEqual(label === 'int8' ? 1 : 10);
      });
    }
  });

  it('bernoulli2 rejects Softmax, naming node, op and march', () => {
    setMarch('bernoulli2');
    const gm = calibratedQat(new SingleOpNet(new Softmax(-1)), { global: defaultQatQconfig }, [
      randn([4, 10], { generator: g }),
    ]);
    const err = thrownBy(() => convertFx(gm));
    expect(err).toBeInstanceOf(ConversionError);
    const f = (err as ConversionError).failures[0]!;
    expect([f.node, f.march]).toEqual(['op', 'bernoulli2']);
    expect(f.op).toMatch(/Softmax/);
    expect((err as Error).message).toMatch(/not in the capability table/);
  });
});
