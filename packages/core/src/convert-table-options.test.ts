// convertFx's tableOptions: a table tuned to where the data is, per module path or node name; bad
// options fail at the boundary with OptionsError.
import '@qtk/march-bayes';
import '@qtk/march-bernoulli2';
import { defaultQatQconfig, defaultQat16bitQconfig, type QConfig } from '@qtk/fake-quant';
import { FixedLayerNorm, FixedSoftmax, FixedTableOp, nonlinear as nl, type NonlinearFunction } from '@qtk/fixed-point';
import { LayerNorm, Sigmoid, Softmax, Tanh } from '@qtk/nn';
import { OptionsError, type NodeTableOptions } from '@qtk/spec';
import * as T from '@qtk/tensor';
import { noGrad, tensor, type Tensor } from '@qtk/tensor';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { convertFx, resetMarch, setMarch } from './index.js';
import { calibratedQat, callModel, thrownBy } from './testing/convert-harness.js';
import { SingleOpNet } from '@qtk/test-models';

beforeEach(() => setMarch('bayes'));
afterEach(() => resetMarch());

/** Calibration data: a spread [lo, hi] (outliers included), so the observed scales cover it all. */
function spread(lo: number, hi: number, n = 2048): Tensor {
  return tensor(Array.from({ length: n }, (_, i) => lo + ((hi - lo) * i) / (n - 1)));
}

interface Measured {
  /** max |fixed − f(x)| over the inputs, in output steps, f evaluated at the (exactly representable) input */
  steps: number;
  table: FixedTableOp;
}

/**
 * Converts `net` (calibrated on [calLo, calHi], int16 in and out on bayes) with `tableOptions` and
 * measures it on every int16 grid point in [lo, hi] (data concentrated there).
 */
function measure(
  net: () => SingleOpNet,
  fn: NonlinearFunction,
  cal: [number, number],
  data: [number, number],
  tableOptions?: Record<string, NodeTableOptions>,
): Measured {
  const gm = calibratedQat(net(), { global: defaultQat16bitQconfig }, [spread(...cal)]);
  const fx = convertFx(gm, { march: 'bayes', onWarning: () => {}, ...(tableOptions ? { tableOptions } : {}) });
  const table = fx.modules().find((m) => m instanceof FixedTableOp) as FixedTableOp;
  const { inScale, outScale } = table.config;
  const xs: number[] = [];
  for (let q = Math.ceil(data[0] / inScale); q <= Math.floor(data[1] / inScale); q++) xs.push(q * inScale);
  const x = tensor(xs);
  const y = noGrad(() => callModel(fx, x)).values();
  let worst = 0;
  xs.forEach((v, i) => {
    worst = Math.max(worst, Math.abs(y[i]! - fn.f(Math.fround(v))) / outScale);
  });
  return { steps: Math.round(worst * 100) / 100, table };
}

describe('convertFx tableOptions', () => {
  it('an inputRange where the data is makes a module table (by module path) more precise', () => {
    // sigmoid calibrated on [-8, 8], data in [-2, 2]: the even points spend 4 of 6 tables outside the data
    const before = measure(() => new SingleOpNet(new Sigmoid()), nl.sigmoid, [-8, 8], [-2, 2]);
    const after = measure(() => new SingleOpNet(new Sigmoid()), nl.sigmoid, [-8, 8], [-2, 2], {
      op: { inputRange: [-2, 2] },
    });
    if (process.env.QTK_MEASURE) console.log(`MEASURE sigmoid ${before.steps} -> ${after.steps}`);
    // measured 1.96 -> 1.11
    expect(before.steps).toBeGreaterThan(1.8);
    expect(after.steps).toBeLessThan(1.25);
    const seg = after.table.config.plans[0]!;
    expect(seg.kind === 'segment' && seg.table.inputRange).toEqual([-2, 2]);
    // the six tables lie over [-2, 2]: B[0] = floor(-2/s_in), B[6] = ceil(2/s_in)
    const s = after.table.config.inScale;
    expect(seg.kind === 'segment' && [seg.table.B[0], seg.table.B[6]]).toEqual([Math.floor(-2 / s), Math.ceil(2 / s)]);
  });

  it('a function call is tuned by its node name; range and dividing together (rsqrt: 9.3 -> 1 steps)', () => {
    const make = () => new SingleOpNet((x) => T.rsqrt(x));
    // rsqrt's default is curvature points over the whole calibrated range [0.01, 16], crowded at the pole
    const before = measure(make, nl.rsqrt, [0.01, 16], [0.25, 4]);
    const after = measure(make, nl.rsqrt, [0.01, 16], [0.25, 4], {
      rsqrt: { inputRange: [0.25, 4], dividing: 'curvature' },
    });
    if (process.env.QTK_MEASURE) console.log(`MEASURE rsqrt ${before.steps} -> ${after.steps}`);
    // measured 9.32 -> 0.96
    expect(before.steps).toBeGreaterThan(8);
    expect(after.steps).toBeLessThan(1.2);
  });

  it('explicit dividing points are used as given (snapped to the input grid)', () => {
    const d = [-3, -2, -1, 0, 1, 2, 3];
    const r = measure(() => new SingleOpNet(new Sigmoid()), nl.sigmoid, [-8, 8], [-3, 3], { op: { dividing: d } });
    const seg = r.table.config.plans[0]!;
    const s = r.table.config.inScale;
    expect(seg.kind === 'segment' && seg.table.dividing).toBe('explicit');
    expect(seg.kind === 'segment' && seg.table.B).toEqual([...d.map((v) => Math.round(v / s)), 32767]);
    expect(r.steps).toBeLessThan(1.5);
  });

  it('softmax takes options per table (exp, reciprocal) and builds them', () => {
    setMarch('bayes');
    const x = T.randn([16, 32], { std: 3, generator: new T.Generator(3) });
    const gm = calibratedQat(new SingleOpNet(new Softmax(-1)), { global: defaultQat16bitQconfig }, [x]);
    const plain = convertFx(gm, { onWarning: () => {} })
      .modules()
      .find((m) => m instanceof FixedSoftmax) as FixedSoftmax;
    const tuned = convertFx(gm, {
      onWarning: () => {},
      tableOptions: { op: { exp: { inputRange: [-6, 0] }, reciprocal: { dividing: 'even' } } },
    })
      .modules()
      .find((m) => m instanceof FixedSoftmax) as FixedSoftmax;
    const exp0 = plain.config.exp;
    const exp1 = tuned.config.exp;
    const rec1 = tuned.config.reciprocal;
    expect(exp0.kind === 'segment' && exp0.table.inputRange).toBe(undefined);
    expect(exp1.kind === 'segment' && exp1.table.inputRange).toEqual([-6, 0]);
    expect(exp1.kind === 'segment' && exp0.kind === 'segment' && exp1.table.B[0]! > exp0.table.B[0]!).toBe(true);
    expect(rec1.kind === 'segment' && rec1.table.dividing).toBe('even');
  });

  it('layernorm takes options for its rsqrt table, and only for it', () => {
    setMarch('bayes');
    const x = T.randn([8, 32], { std: 2, generator: new T.Generator(4) });
    const gm = calibratedQat(new SingleOpNet(new LayerNorm(32)), { global: defaultQat16bitQconfig }, [x]);
    const points = [0.5, 1, 1.5, 2, 3, 4, 6];
    const ln = convertFx(gm, { onWarning: () => {}, tableOptions: { op: { rsqrt: { dividing: points } } } })
      .modules()
      .find((m) => m instanceof FixedLayerNorm) as FixedLayerNorm;
    const r = ln.config.rsqrt;
    expect(r.kind === 'segment' && r.table.dividing).toBe('explicit');
    const sIn = r.kind === 'segment' ? r.table.sIn : NaN;
    expect(r.kind === 'segment' && r.table.B.slice(0, 7)).toEqual(
      points.map((p) => Math.min(32767, Math.round(p / sIn))),
    );
    const e = thrownBy(() =>
      convertFx(gm, { onWarning: () => {}, tableOptions: { op: { exp: { inputRange: [-1, 0] } } } }),
    );
    expect(e).toBeInstanceOf(OptionsError);
    expect((e as Error).message).toMatch(
      /exp: node 'op' \(rule 'composite:layer_norm'\) has the tables rsqrt, so its options are \{ rsqrt\?: \{ inputRange\?, dividing\? \} \}/,
    );
  });

  it('options for a qint8 table change nothing and say so', () => {
    setMarch('bernoulli2');
    const gm = calibratedQat(new SingleOpNet(new Sigmoid()), { global: defaultQatQconfig as QConfig }, [spread(-8, 8)]);
    const warnings: string[] = [];
    convertFx(gm, {
      march: 'bernoulli2',
      onWarning: (m) => warnings.push(m),
      tableOptions: { op: { inputRange: [-2, 2] } },
    });
    expect(warnings.join('\n')).toMatch(
      /op: table options for the sigmoid change nothing: a qint8 input indexes a 256-entry table/,
    );
  });

  describe('bad options are OptionsErrors', () => {
    const gm = () => calibratedQat(new SingleOpNet(new Sigmoid()), { global: defaultQat16bitQconfig }, [spread(-8, 8)]);
    const fail = (tableOptions: unknown) =>
      thrownBy(() =>
        convertFx(gm(), {
          march: 'bayes',
          onWarning: () => {},
          tableOptions: tableOptions as Record<string, NodeTableOptions>,
        }),
      ) as OptionsError;

    it('unknown module names are all listed', () => {
      const e = fail({ 'head.sigmoid': {}, op: {}, 'op.exp': { dividing: 'even' } });
      expect(e).toBeInstanceOf(OptionsError);
      expect(e.issues.map((i) => i.path)).toEqual(['head.sigmoid', 'op.exp']);
      expect(e.message).toMatch(
        /head\.sigmoid: no module or node of this name in the model; key table options by module path/,
      );
    });

    it('schema violations name the path', () => {
      expect(fail({ op: { inputRange: [2, -2] } }).message).toMatch(
        /op\.inputRange: inputRange is \[lo, hi\] with lo < hi/,
      );
      expect(fail({ op: { dividing: 'log' } }).issues[0]!.path).toBe('op.dividing');
      expect(fail({ op: { dividing: [0, 1, 2] } }).message).toMatch(/explicit dividing points are the 7 points/);
      expect(fail({ op: { dividing: [0, 1, 2, 3, 2, 5, 6] } }).message).toMatch(/non-decreasing/);
      expect(fail({ op: { inputRange: [-1, 1], dividing: [-1, 0, 0, 0, 0, 0, 1] } }).message).toMatch(
        /either inputRange or explicit dividing points/,
      );
      expect(fail({ op: { range: [-1, 1] } }).message).toMatch(/Unrecognized key\(s\) in object: 'range'/);
    });

    it('options that do not fit the node: no table, composite parts on a single table', () => {
      const onStub = fail({ quant: { inputRange: [-1, 1] } });
      expect(onStub.message).toMatch(/tableOptions\['quant'\].*builds no lookup table/);
      const parts = fail({ op: { exp: { inputRange: [-1, 0] } } });
      expect(parts.message).toMatch(
        /exp: node 'op' \(rule 'table:sigmoid'\) has one table, so its options are \{ inputRange\?, dividing\? \}/,
      );
    });

    it('explicit points an odd function cannot take', () => {
      const g = calibratedQat(new SingleOpNet(new Tanh()), { global: defaultQat16bitQconfig }, [spread(-4, 4)]);
      const e = thrownBy(() =>
        convertFx(g, {
          march: 'bayes',
          onWarning: () => {},
          tableOptions: { op: { dividing: [-3, -2, -1, 0, 1, 2, 3] } },
        }),
      );
      expect(e).toBeInstanceOf(OptionsError);
      expect((e as Error).message).toMatch(/tableOptions\['op'\].*tanh is odd, so its table fits x >= 0/);
    });
  });
});
