import '@qtk/march-bayes';
import { bernoulli2UnifyCat } from '@qtk/march-bernoulli2';
import { defaultQat16bitQconfig, defaultQatQconfig, type QConfig } from '@qtk/fake-quant';
import { FixedAdd, FixedCat, QTensor } from '@qtk/fixed-point';
import type { GraphModule } from '@qtk/ir';
import { DeQuantStub, FloatFunctional, Module, QuantStub } from '@qtk/nn';
import { UnsupportedOpError } from '@qtk/spec';
import {
  abs,
  add,
  cat,
  clamp,
  eq,
  ge,
  Generator,
  gt,
  le,
  lt,
  maximum,
  mean,
  minimum,
  mul,
  randn,
  sub,
  sum,
  type Tensor,
} from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { ConversionError, convertFx } from './index.js';
import {
  calibratedQat,
  catAndProducers,
  catInputRequants,
  maxSteps,
  outputStep,
  thrownBy,
} from './testing/convert-harness.js';

type March = 'bayes' | 'bernoulli2' | typeof bernoulli2UnifyCat;
type Body = (n: Pair, a: Tensor, b: Tensor) => Tensor;

/** Two QuantStubs (so the operands get their own scales) → body → DeQuantStub. */
class Pair extends Module {
  readonly qa = new QuantStub();
  readonly qb = new QuantStub();
  readonly dequant = new DeQuantStub();
  readonly ff = new FloatFunctional();
  readonly body: Body;
  constructor(body: Body) {
    super();
    this.body = body;
  }
  forward(x: Tensor, y: Tensor): Tensor {
    return this.dequant.call(this.body(this, this.qa.call(x), this.qb.call(y)));
  }
}

const SHAPE = [2, 4, 3];
const GAIN_B = 7; // b's range (and scale) is ~7x a's

function inputs(g: Generator): [Tensor, Tensor] {
  return [randn(SHAPE, { generator: g }), randn(SHAPE, { generator: g }).mul(GAIN_B)];
}

function prepared(body: Body, qconfig: QConfig = defaultQatQconfig): GraphModule {
  const g = new Generator(5);
  return calibratedQat(
    new Pair(body).eval(),
    { global: qconfig },
    Array.from({ length: 3 }, () => inputs(g)),
    { validation: false },
  );
}

const run = (gm: GraphModule, a: Tensor, b: Tensor) =>
  (gm as unknown as { call(a: Tensor, b: Tensor): unknown }).call(a, b);

/**
 * Largest |fake-quant − fixed-point| in output steps over fresh random inputs, both read back as
 * integers on the output grid (so float32 rounding of q·s, up to 0.002 steps for qint16, is not counted).
 */
function steps(body: Body, march: March, qconfig?: QConfig, seed = 77): number {
  const qat = prepared(body, qconfig);
  const fixed = convertFx(qat, { march, onWarning: () => {} });
  const step = outputStep(qat);
  const g = new Generator(seed);
  let worst = 0;
  for (let k = 0; k < 3; k++) {
    const [a, b] = inputs(g);
    const want = run(qat, a, b) as Tensor;
    const got = run(fixed, a, b) as Tensor;
    expect(got.shape).toEqual(want.shape);
    worst = Math.max(worst, maxSteps(want, got, step, true));
  }
  return worst;
}

const BOTH: [string, Body][] = [
  ['add(a, b)', (_, a, b) => add(a, b)],
  ['a.add(b)', (_, a, b) => a.add(b)],
  ['ff.add(a, b)', (n, a, b) => n.ff.add(a, b)],
  ['sub(a, b) (subtrahend has the larger scale)', (_, a, b) => sub(a, b)],
  ['sub(b, a)', (_, a, b) => sub(b, a)],
  ['ff.sub(a, b)', (n, a, b) => n.ff.sub(a, b)],
  ['add(a, a) (equal scales)', (_, a) => add(a, a)],
  ['add broadcast', (_, a, b) => add(a, mean(b, [2], true))],
  ['mul(a, b)', (_, a, b) => mul(a, b)],
  ['ff.mul(a, b)', (n, a, b) => n.ff.mul(a, b)],
  ['ff.addScalar(a, 0.7)', (n, a) => n.ff.addScalar(a, 0.7)],
  ['ff.addScalar(b, -2.5)', (n, _, b) => n.ff.addScalar(b, -2.5)],
  ['add(a, 3)', (_, a) => add(a, 3)],
  ['ff.mulScalar(a, -1.3)', (n, a) => n.ff.mulScalar(a, -1.3)],
  ['mul(b, 0.05)', (_, __, b) => mul(b, 0.05)],
  ['cat([a, b], 1)', (_, a, b) => cat([a, b], 1)],
  ['ff.cat([b, a], 2)', (n, a, b) => n.ff.cat([b, a], 2)],
  ['mean(b, 1)', (_, __, b) => mean(b, 1)],
  ['ff.mean(a, [1, 2], true)', (n, a) => n.ff.mean(a, [1, 2], true)],
  ['sum(a, 2)', (_, a) => sum(a, 2)],
  ['add after mul (a chain)', (_, a, b) => add(mul(a, b), a)],
  ['sub(2, a) (the number first)', (_, a) => sub(2, a)],
  ['b.sub(0) (x − 0)', (_, __, b) => b.sub(0)],
  ['a.mul(b)', (_, a, b) => a.mul(b)],
  ['mul(a, 0) (x · 0)', (_, a) => mul(a, 0)],
];

const BAYES_ONLY: [string, Body][] = [
  ['maximum(a, b)', (_, a, b) => maximum(a, b)],
  ['minimum(a, b)', (_, a, b) => minimum(a, b)],
  ['a.maximum(0.3)', (_, a) => a.maximum(0.3)],
  ['clamp(b, -2, 3.3)', (_, __, b) => clamp(b, -2, 3.3)],
  ['abs(a)', (_, a) => abs(a)],
];

describe('convertFx: elementwise ops, fake-quant vs fixed point within 1 output step', () => {
  for (const march of ['bayes', 'bernoulli2'] as const) {
    for (const [name, body] of BOTH) {
      it(`${march}: ${name}`, () => {
        expect(steps(body, march)).toBeLessThanOrEqual(1);
      });
    }
  }
  for (const [name, body] of BAYES_ONLY) {
    it(`bayes: ${name}`, () => {
      expect(steps(body, 'bayes')).toBeLessThanOrEqual(1);
    });
  }
  for (const [name, body] of [BOTH[0]!, BOTH[3]!, BOTH[8]!, BOTH[12]!, BOTH[15]!, BOTH[17]!, BAYES_ONLY[0]!]) {
    it(`bayes qint16: ${name}`, () => {
      expect(steps(body, 'bayes', defaultQat16bitQconfig)).toBeLessThanOrEqual(1);
    });
  }
});

describe('convertFx: bayes comparisons give qbool', () => {
  const cases: [string, Body][] = [
    ['gt', (_, a, b) => gt(a, b)],
    ['lt', (_, a, b) => lt(a, b)],
    ['ge', (_, a, b) => ge(a, b)],
    ['le', (_, a, b) => le(a, b)],
    ['eq (a vs a)', (_, a) => eq(a, a)],
    ['gt(b, 0.5)', (_, __, b) => gt(b, 0.5)],
    ['lt(a, 0)', (_, a) => lt(a, 0)],
  ];
  for (const [name, body] of cases) {
    it(name, () => {
      const qat = prepared(body);
      const fixed = convertFx(qat, { march: 'bayes', onWarning: () => {} });
      const g = new Generator(9);
      for (let k = 0; k < 2; k++) {
        const [a, b] = inputs(g);
        const want = run(qat, a, b) as Tensor;
        const got = run(fixed, a, b) as QTensor;
        expect(got).toBeInstanceOf(QTensor);
        expect(got.dtype).toBe('qbool');
        expect(got.data.dtype).toBe('bool');
        expect(Array.from(got.ints())).toEqual(Array.from(want.values()));
      }
    });
  }
});

describe('convertFx: elementwise integers and errors', () => {
  it('bayes add uses the shift-and-multiplier plan, bernoulli2 the conv-with-sumin plan', () => {
    const qat = prepared((_, a, b) => add(a, b));
    for (const march of ['bayes', 'bernoulli2'] as const) {
      const fixed = convertFx(qat, { march, onWarning: () => {} });
      const { plan } = ([...fixed.modules()].find((x) => x instanceof FixedAdd) as FixedAdd).config;
      const [shifted, multiplied] = plan.a.shift > 0 ? [plan.a, plan.b] : [plan.b, plan.a];
      if (march === 'bayes') {
        // the larger-scale operand shifted by sh > 0 with weight 1, the other multiplied by Q, no saturation
        expect([shifted.m, shifted.shift > 0, multiplied.shift, plan.saturate32]).toEqual([1, true, 0, false]);
      } else {
        // conv with a sumin: an int8 weight on the smaller-scale operand, an int32-saturated accumulator
        expect(plan.saturate32).toBe(true);
        expect(Math.min(Math.abs(plan.a.m), Math.abs(plan.b.m))).toBeLessThanOrEqual(127);
      }
    }
  });

  it('an op bayes has and bernoulli2 lacks is a ConversionError naming the node, the op and the march', () => {
    for (const body of [(_: Pair, a: Tensor, b: Tensor) => maximum(a, b), (_: Pair, a: Tensor) => abs(a)]) {
      const qat = prepared(body);
      const err = thrownBy(() => convertFx(qat, { march: 'bernoulli2', onWarning: () => {} }));
      expect(err).toBeInstanceOf(ConversionError);
      const f = (err as ConversionError).failures[0]!;
      expect(f).toBeInstanceOf(UnsupportedOpError);
      expect(f.march).toBe('bernoulli2');
      expect(f.node).toMatch(/maximum|abs/);
      expect(f.op).toMatch(/maximum \(Max\)|abs \(Abs\)/);
      expect((err as Error).message).toMatch(/bernoulli2/);
    }
  });
});

describe('unifyCatScale (bernoulli2, optional)', () => {
  const body: Body = (_, a, b) => cat([add(a, b), mul(a, b), a], 1);

  it('producers of a cat adopt its scale, so the cat copies them; a QuantStub input keeps its scale', () => {
    const qat = prepared(body);
    const targets = qat.graph.nodes.map((n) => n.target).join();
    const fixed = convertFx(qat, { march: bernoulli2UnifyCat, onWarning: () => {} });
    expect(qat.graph.nodes.map((n) => n.target).join()).toBe(targets); // the QAT model is not modified
    const { cat: c, add: addM, mul: mulM } = catAndProducers(fixed);
    expect(addM.config.outScale).toBe(c.config.outScale);
    expect(mulM.config.outScale).toBe(c.config.outScale);
    const copy = catInputRequants(c);
    expect(copy[0]).toEqual([1, 0, 0]);
    expect(copy[1]).toEqual([1, 0, 0]);
    expect(copy[2]).not.toEqual([1, 0, 0]); // a: the QuantStub's own scale, requantized by the cat
    // without the pass every input is requantized
    const plain = [...convertFx(qat, { march: 'bernoulli2', onWarning: () => {} }).modules()].find(
      (m) => m instanceof FixedCat,
    ) as FixedCat;
    expect(plain.config.requants[0]!.m[0]).not.toBe(1);
  });

  it('stays within 1 output step of the fake-quant model inside the calibrated ranges', () => {
    // the calibration inputs (seed 5): outside them the QAT model clips add / mul at their own
    // ranges, the unified model at the cat's wider one
    expect(steps(body, bernoulli2UnifyCat, undefined, 5)).toBeLessThanOrEqual(1);
    expect(steps(body, 'bernoulli2')).toBeLessThanOrEqual(1);
  });
});
