import { moduleCodecs } from '@qtk/ir';
import { MaxPool2d, Module } from '@qtk/nn';
import { Generator, rand } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import * as fixedPoint from './index.js';
import {
  FixedAdd,
  FixedAvgPool2d,
  FixedCat,
  FixedClamp,
  FixedCompare,
  FixedMinMax,
  FixedMul,
  FixedReduce,
  FixedResize,
  FixedTableOp,
  FixedValueOp,
  planAddShiftLarger,
  planAddConvSumin,
  planRequantizeInt16,
  planRequantizeWide,
  planTable,
  QTensor,
  Quantize,
  requantizePlanners,
  type RequantizePlanner,
  scalarOperandInt8,
} from './index.js';
import { planSingleOperand, type EwOperand } from './elementwise.js';
import { nonlinear } from './index.js';
import type { ObserverDType } from '@qtk/spec';

/** The shift limits bayes gives planAddShiftLarger (23 bits next to a qint8 larger-scale operand, else 15). */
const planAddBayes = (a: EwOperand, b: EwOperand, sub: boolean) =>
  planAddShiftLarger(a, b, sub, (d) => (d === 'qint8' ? 23 : 15));

/** A FixedAdd (or subtraction) of qint8 operands at scales 0.02 and 0.03 to a qint8 output at `outScale`. */
function fixedAddOf(
  sub: boolean,
  planAdd: typeof planAddBayes,
  requantize: typeof planRequantizeWide,
  outScale: number,
): FixedAdd {
  const plan = planAdd({ scale: 0.02, dtype: 'qint8' }, { scale: 0.03, dtype: 'qint8' }, sub);
  const requant = requantize(plan.sAcc, outScale, 'qint8');
  return new FixedAdd({ sub, plan, requant, outScale, outDtype: 'qint8', scalars: [null, null] });
}

/**
 * Every fixed-point Module subclass @qtk/fixed-point exports. The composites' QAT forms (SoftmaxQat,
 * LayerNormQat) are QAT modules: their codecs, which build FakeQuantize steps, are @qtk/core's.
 */
const QAT_FORMS: unknown[] = [fixedPoint.SoftmaxQat, fixedPoint.LayerNormQat];
const MODULE_CLASSES = Object.entries(fixedPoint).filter(
  ([, v]) =>
    typeof v === 'function' && (v as { prototype?: unknown }).prototype instanceof Module && !QAT_FORMS.includes(v),
) as [string, new (...a: never[]) => Module][];

/** Through the codec and JSON text, as a model file carries it. */
function roundTrip<M extends Module>(m: M): M {
  const codec = moduleCodecs.forModule(m);
  if (!codec) throw new Error(`no codec for ${m.constructor.name}`);
  const back = moduleCodecs.build(m.constructor.name, JSON.parse(JSON.stringify(codec.config(m))));
  expect(back).toBeInstanceOf(m.constructor);
  expect(JSON.stringify(moduleCodecs.forModule(back)!.config(back))).toBe(JSON.stringify(codec.config(m)));
  return back as M;
}

const q = (n: number, seed: number, scale: number, dtype: ObserverDType = 'qint8', shape = [2, 3, 4, 4]): QTensor => {
  const hi = dtype === 'qint8' ? 127 : 32767;
  const v = rand([n], { generator: new Generator(seed) }).values();
  return QTensor.fromInts(
    Array.from(v, (x) => Math.round((x * 2 - 1) * hi)),
    shape,
    [scale],
    dtype,
  );
};
const ints = (y: unknown) => Array.from((y as QTensor).ints());
const call = (m: Module, ...a: unknown[]) => (m as unknown as { call(...x: unknown[]): unknown }).call(...a);

describe('fixed-point module codecs', () => {
  it('every Module class exported by @qtk/fixed-point has a codec (a new module needs one in codecs.ts)', () => {
    expect(MODULE_CLASSES.length).toBeGreaterThanOrEqual(15);
    const missing = MODULE_CLASSES.filter(
      ([, cls]) => !moduleCodecs.has(cls.name) || moduleCodecs.get(cls.name).cls !== cls,
    ).map(([name]) => name);
    expect(missing).toEqual([]);
  });

  it('every fixed-point codec checks its stored config with a zod schema', () => {
    const unchecked = MODULE_CLASSES.filter(([, cls]) => !(moduleCodecs.get(cls.name).schema instanceof z.ZodType)).map(
      ([name]) => name,
    );
    expect(unchecked).toEqual([]);
  });

  it('elementwise modules round-trip with identical integers', () => {
    const a = q(96, 1, 0.02);
    const b = q(96, 2, 0.03);
    const modules: [Module, unknown[]][] = [
      [fixedAddOf(false, planAddBayes, planRequantizeWide, 0.04), [a, b]],
      [fixedAddOf(true, planAddConvSumin, planRequantizeInt16, 0.05), [a, b]],
      [
        new FixedMul({
          requant: planRequantizeWide(0.02 * 0.5, 0.03, 'qint8'),
          outScale: 0.03,
          outDtype: 'qint8',
          scalars: [null, scalarOperandInt8(-0.5)],
        }),
        [a, -0.5],
      ],
      [
        new FixedCat({
          requants: [planRequantizeWide(0.02, 0.03, 'qint8'), planRequantizeWide(0.03, 0.03, 'qint8')],
          outScale: 0.03,
          outDtype: 'qint8',
        }),
        [[a, b], 1],
      ],
      [
        new FixedMinMax({
          kind: 'maximum',
          requants: [planRequantizeWide(0.02, 0.03, 'qint8'), planRequantizeWide(0.03, 0.03, 'qint8')],
          outScale: 0.03,
          outDtype: 'qint8',
          scalars: [null, null],
        }),
        [a, b],
      ],
      [
        new FixedCompare({
          kind: 'ge',
          plan: planAddBayes({ scale: 0.02, dtype: 'qint8' }, { scale: 0.03, dtype: 'qint8' }, true),
          scalars: [null, null],
        }),
        [a, b],
      ],
      [new FixedClamp('clamp', 'half_even', planRequantizeWide(0.02, 0.01, 'qint16'), 0.01), [a, -0.5, 0.7]],
      [new FixedClamp('abs', 'half_up'), [a]],
      [new FixedReduce('mean', 0.01, 'qint8', planRequantizeInt16), [a, [2, 3], true]],
      [new FixedReduce('sum', 0.2, 'qint16', planRequantizeWide), [a, 1]],
    ];
    for (const [m, args] of modules) {
      const back = roundTrip(m);
      expect(ints(call(back, ...args))).toEqual(ints(call(m, ...args)));
    }
  });

  it('version-1 add plans (which named their planner) load as version 2 with identical integers', () => {
    const a = q(96, 1, 0.02);
    const b = q(96, 2, 0.03);
    const ops = [
      { scale: 0.02, dtype: 'qint8' as const },
      { scale: 0.03, dtype: 'qint8' as const },
    ] as const;
    const cases: [Module, string][] = [
      [fixedAddOf(true, planAddConvSumin, planRequantizeInt16, 0.05), 'bernoulli2'],
      [new FixedCompare({ kind: 'lt', plan: planAddBayes(ops[0], ops[1], true), scalars: [null, null] }), 'bayes'],
      [new FixedCompare({ kind: 'gt', plan: planSingleOperand(1, -1, 0.03), scalars: [null, null] }), 'single'],
    ];
    for (const [m, rule] of cases) {
      const config = JSON.parse(JSON.stringify(moduleCodecs.forModule(m)!.config(m)));
      expect(config.plan.version).toBe(2);
      expect(config.plan.rule).toBeUndefined();
      const old = { ...config, plan: { ...config.plan, version: 1, rule } };
      const back = moduleCodecs.build(m.constructor.name, old) as FixedAdd | FixedCompare;
      expect(back.config.plan).toEqual((m as FixedAdd | FixedCompare).config.plan);
      expect(ints(call(back, a, b))).toEqual(ints(call(m, a, b)));
    }
    // a version-2 plan with a planner's name is not a plan this version writes
    const m = cases[0]![0];
    const config = JSON.parse(JSON.stringify(moduleCodecs.forModule(m)!.config(m)));
    expect(() => moduleCodecs.build('FixedAdd', { ...config, plan: { ...config.plan, rule: 'bayes' } })).toThrow(
      /rule/,
    );
  });

  it('an add plan from a planner fixed-point does not know (a shift limit of 4) round-trips as its integers', () => {
    const plan = planAddShiftLarger({ scale: 0.02, dtype: 'qint8' }, { scale: 0.03, dtype: 'qint8' }, false, () => 4);
    expect(plan.a).toEqual({ m: 11, shift: 0, negate: false }); // rhu(0.02·2^4/0.03) = rhu(10.67)
    expect(plan.b).toEqual({ m: 1, shift: 4, negate: false });
    const m = new FixedAdd({
      sub: false,
      plan,
      requant: planRequantizeWide(plan.sAcc, 0.04, 'qint8'),
      outScale: 0.04,
      outDtype: 'qint8',
      scalars: [null, null],
    });
    const a = q(96, 5, 0.02);
    const b = q(96, 6, 0.03);
    expect(ints(call(roundTrip(m), a, b))).toEqual(ints(call(m, a, b)));
  });

  it("modules that plan when they run store their planner's registered name, a third party's too", () => {
    const a = q(96, 7, 0.02);
    // a planner fixed-point does not ship: the accumulator at twice its scale (outputs about doubled)
    const doubled: RequantizePlanner = (sAcc, sOut, d, w) =>
      planRequantizeWide(typeof sAcc === 'number' ? sAcc * 2 : Array.from(sAcc, (v) => v * 2), sOut, d, w);
    const reduce = new FixedReduce('sum', 0.2, 'qint16', doubled);
    const pool = new FixedAvgPool2d({ kind: 'adaptive', outputSize: [1, 1] }, 0.01, 'qint8', doubled);
    const save = (m: Module) => moduleCodecs.forModule(m)!.config(m);
    expect(() => save(reduce)).toThrow(
      /FixedReduce: its requantize planner is not registered.*requantizePlanners\.register/,
    );
    expect(() => save(pool)).toThrow(/FixedAvgPool2d: its requantize planner is not registered/);
    requantizePlanners.register({ name: 'test_doubled', plan: doubled });
    try {
      expect((save(reduce) as { rule: string }).rule).toBe('test_doubled');
      const builtIn = ints(call(new FixedReduce('sum', 0.2, 'qint16', 'wide'), a, 1));
      const own = ints(call(reduce, a, 1));
      expect(own).not.toEqual(builtIn);
      expect(ints(call(roundTrip(reduce), a, 1))).toEqual(own);
      expect(ints(call(roundTrip(pool), a))).toEqual(ints(call(pool, a)));
      requantizePlanners.unregister('test_doubled');
      expect(() =>
        moduleCodecs.build('FixedReduce', save(new FixedReduce('sum', 0.2, 'qint16', 'wide'))),
      ).not.toThrow();
      expect(() =>
        moduleCodecs.build('FixedReduce', { kind: 'sum', outScale: 0.2, outDtype: 'qint16', rule: 'test_doubled' }),
      ).toThrow(/no requantize planner 'test_doubled' is registered \(registered: int16_intermediate, wide\)/);
    } finally {
      requantizePlanners.unregister('test_doubled');
    }
  });

  it('tables, resize, value ops and Quantize round-trip with identical integers', () => {
    const a8 = q(96, 3, 0.05);
    const a16 = q(96, 4, 0.0004, 'qint16');
    const fn = nonlinear.sigmoid;
    const modules: [Module, unknown[]][] = [
      [
        new FixedTableOp({
          label: 'sigmoid',
          inDtype: 'qint8',
          inScale: 0.05,
          outScale: 1 / 128,
          outDtype: 'qint8',
          plans: [planTable(fn, 0.05, 'qint8', 1 / 128, 'qint8', 'even')],
        }),
        [a8],
      ],
      [
        new FixedTableOp({
          label: 'sigmoid',
          inDtype: 'qint16',
          inScale: 0.0004,
          outScale: 1 / 32768,
          outDtype: 'qint16',
          plans: [planTable(fn, 0.0004, 'qint16', 1 / 32768, 'qint16', 'curvature')],
        }),
        [a16],
      ],
      [new FixedResize({ options: { scaleFactor: 2, mode: 'bilinear', alignCorners: false } }), [a8]],
      [
        new FixedResize({
          options: { size: [7, 5], mode: 'bilinear' },
          output: { scale: 0.04, dtype: 'qint8', plan: planRequantizeWide(0.05 / 65536, 0.04, 'qint8') },
        }),
        [a8],
      ],
      [new FixedValueOp({ kind: 'module', module: new MaxPool2d(2, { stride: 1 }) }), [a8]],
      [
        new FixedValueOp({ kind: 'function', name: 'relu' }, 'relu6', {
          scale: 0.05,
          dtype: 'qint8',
          plan: null,
          clamp: [0, 120],
        }),
        [a8],
      ],
      [new FixedValueOp({ kind: 'method', name: 'reshape' }), [a8, [2, 48]]],
    ];
    for (const [m, args] of modules) {
      const back = roundTrip(m);
      const want = call(m, ...args) as QTensor;
      const got = call(back, ...args) as QTensor;
      expect(got.shape).toEqual(want.shape);
      expect(Array.from(got.scale)).toEqual(Array.from(want.scale));
      expect(ints(got)).toEqual(ints(want));
    }
    const quant = new Quantize({ scale: Float32Array.of(0.013), dtype: 'qint16' }, 'half_even');
    const x = rand([2, 8], { generator: new Generator(5) });
    expect(ints(call(roundTrip(quant), x))).toEqual(ints(call(quant, x)));
  });
});
