// What the march suite does with each op of a table, and the bounds it holds them to.
import { BAYES_CAPABILITIES } from '@qtk/march-bayes';
import { BERNOULLI2_CAPABILITIES } from '@qtk/march-bernoulli2';
import { defineCapabilities, defineOp, hasOp, type MarchBackendV1 } from '@qtk/spec';
import { describe, expect, it } from 'vitest';
import { IMPL_STEP_BOUNDS, kinkStepBound, OP_PROBES, planMarchOps, stepBound } from './index.js';

// third parties' ops: in the catalog (so a table may name it), but no probe model knows it
for (const op of ['Frobnicate', 'Twiddle']) if (!hasOp(op)) defineOp({ name: op, ownOutputScale: true });

const marchWith = (ops: { op: string; impl?: 'integer' | 'passthrough' }[]): MarchBackendV1 => ({
  apiVersion: 1,
  id: 'plan-test',
  capabilities: defineCapabilities({
    version: 1,
    activationDtypes: ['qint8', 'qint16'],
    weightDtypes: ['qint8'],
    weightPerChannel: true,
    ops: [...ops, { op: 'Relu', impl: 'passthrough', dtypes: ['qint8'] }],
  }),
  hooks: {},
});

describe('planMarchOps', () => {
  it('an op without a probe model and without a skip is missing, with an error naming the op and the march', () => {
    const plan = planMarchOps(
      marchWith([
        { op: 'Frobnicate', impl: 'integer' },
        { op: 'Conv', impl: 'integer' },
      ]),
    );
    expect(plan.map((p) => [p.op, p.kind])).toEqual([
      ['Frobnicate', 'missing'],
      ['Conv', 'probe'],
      ['Relu', 'probe'],
    ]);
    const missing = plan[0]!;
    expect(missing.kind === 'missing' && missing.error.message).toMatch(
      /no probe model for op 'Frobnicate' of march 'plan-test'.*skip/,
    );
  });

  it('a skip with a reason, or a probe of the march own, takes the op out of the missing list', () => {
    const march = marchWith([{ op: 'Frobnicate' }, { op: 'Twiddle' }]);
    const plan = planMarchOps(march, {
      skip: { Frobnicate: 'no float op exists for it' },
      probes: { Twiddle: OP_PROBES.Relu! },
    });
    expect(plan.map((p) => p.kind)).toEqual(['skip', 'probe', 'probe']);
    expect(plan[0]).toMatchObject({ reason: 'no float op exists for it' });
  });

  it("probes every dtype the op claims: its own list, else the table's", () => {
    const plan = planMarchOps(marchWith([{ op: 'Add', impl: 'integer' }]));
    expect(plan.map((p) => (p.kind === 'probe' ? p.dtypes : []))).toEqual([['qint8', 'qint16'], ['qint8']]);
  });

  it('has a probe model for every op of the bernoulli2 table and every bayes op that a model can contain', () => {
    const noModel = ['Tile', 'TopK']; // Gather is probed through @qtk/onnx's importer function
    const missing = (ops: readonly { op: string }[]) => ops.map((o) => o.op).filter((op) => !OP_PROBES[op]);
    expect(missing(BERNOULLI2_CAPABILITIES.ops)).toEqual([]);
    expect(missing(BAYES_CAPABILITIES.ops).sort()).toEqual(noModel.sort());
  });
});

describe('step bounds', () => {
  it('by impl, by op where documented, and overridable per op and dtype', () => {
    expect(stepBound('Add', 'integer', 'qint8')).toBe(1);
    expect(stepBound('Relu', 'passthrough', 'qint16')).toBe(0);
    expect(stepBound('Conv', undefined, 'qint8')).toBe(IMPL_STEP_BOUNDS.integer.qint8);
    expect(stepBound('Sigmoid', 'segment_table', 'qint16')).toBe(3);
    expect(stepBound('Reciprocal', 'segment_table', 'qint16')).toBe(4);
    expect(stepBound('Softmax', 'composite', 'qint16')).toBe(6);
    expect(stepBound('Div', 'composite', 'qint16')).toBe(10);
    expect(stepBound('Exp', 'segment_table', 'qint16', { Exp: { qint16: 8 } })).toBe(8);
    expect(() => stepBound('Add', 'integer', 'qint32')).toThrow(/no step bound for op 'Add'/);
  });

  it("a kink's bound is |Δslope|·h/4 in output steps plus one (h: a sixth of the int16 inputs over 63)", () => {
    // LeakyReLU(0.1) on ±8 → ±8: 0.9 · (8/189) / 4 / (8/32767.5) = 39.009 → 40, plus one
    expect(kinkStepBound(0.9, 8, 8)).toBe(41);
    expect(kinkStepBound(0, 8, 8)).toBe(1);
  });
});
