// What a march adds to prepare without core naming it: its own graph rewrites and passes (hooks),
// and the composite ops its capability table marks 'composite' (the compositeOps registry).
import { BERNOULLI2_CAPABILITIES, BERNOULLI2_NUMERICS } from '@qtk/march-bernoulli2';
import { defaultQatQconfig, FakeQuantize } from '@qtk/fake-quant';
import {
  compositeOps,
  createMarchConverter,
  DEFAULT_CONVERT_RULES,
  FixedTableOp,
  nonlinear,
  planTable,
  type CompositeOp,
  type ConvertRule,
  type QatStep,
  type StepFakeQuant,
} from '@qtk/fixed-point';
import type { GraphModule } from '@qtk/ir';
import { DeQuantStub, Module, QuantStub, Tanh } from '@qtk/nn';
import {
  defineCapabilities,
  marches,
  type CapabilityTable,
  type MarchBackendV1,
  type MarchPrepareContext,
  type MarchPreparePass,
} from '@qtk/spec';
import { div, Generator, mul, randn, sigmoid, sub, type Tensor } from '@qtk/tensor';
import { afterAll, describe, expect, it } from 'vitest';
import { convertFx, DEFAULT_PREPARE_PASSES, type QatModule } from './index.js';
import { calibratedQat, callModel, maxSteps, outputStep } from './testing/convert-harness.js';
import { SingleOpNet } from '@qtk/test-models';

/** The int8-only table with `edit` applied to its op list. */
function tableWith(edit: (ops: CapabilityTable['ops']) => CapabilityTable['ops']): CapabilityTable {
  return defineCapabilities({ ...BERNOULLI2_CAPABILITIES, ops: edit([...BERNOULLI2_CAPABILITIES.ops]) });
}

/** A third-party march on that table, with the shared rules and the int8 numerics. */
function testMarch(id: string, table: CapabilityTable, hooks: MarchBackendV1['hooks'] = {}): MarchBackendV1 {
  const march: MarchBackendV1 = {
    apiVersion: 1,
    id,
    capabilities: table,
    hooks: {
      convertNode: createMarchConverter({ march: id, table, numerics: BERNOULLI2_NUMERICS }, DEFAULT_CONVERT_RULES),
      ...hooks,
    },
  };
  return marches.register(march);
}

const x = randn([4, 8], { generator: new Generator(21) });

describe('march prepare hooks', () => {
  it('prepareRewrites edit the float graph before the QAT swap; preparePasses run in order after the fake-quants', () => {
    const seen: string[] = [];
    let intermediate: unknown = null;
    let quantizedAtPass = 0;
    const pass = (name: string): MarchPreparePass => ({
      name,
      run(ctx: MarchPrepareContext) {
        seen.push(name);
        quantizedAtPass = ctx.quantized.size;
        const tanh = ctx.gm.graph.nodes.find((n) => n.target === 'tanh')!;
        intermediate = ctx.intermediateFakeQuant(tanh, { dtype: 'qint8' });
      },
    });
    const march = testMarch('test-prepare-hooks', BERNOULLI2_CAPABILITIES, {
      prepareRewrites: [
        {
          name: 'sigmoid-as-tanh',
          run(gm: GraphModule) {
            for (const n of gm.graph.nodes) if (n.op === 'call_function' && n.target === 'sigmoid') n.target = 'tanh';
          },
        },
      ],
      preparePasses: [pass('first'), pass('second')],
    });
    const gm = calibratedQat(new SingleOpNet((q) => sigmoid(q)), { global: defaultQatQconfig }, [x], {
      prepare: { march },
    });
    const targets = gm.graph.nodes.map((n) => n.target);
    expect(targets).not.toContain('sigmoid');
    // the rewritten node got the activation fake-quant the insert pass gives a requantizing function
    const tanh = gm.graph.nodes.find((n) => n.target === 'tanh')!;
    expect(gm.getSubmodule([...tanh.users][0]!.target)).toBeInstanceOf(FakeQuantize);
    expect(seen).toEqual(['first', 'second']);
    expect(quantizedAtPass).toBe(2); // the QuantStub and tanh's fake-quant
    expect(intermediate).toBeInstanceOf(FakeQuantize);
    expect((intermediate as FakeQuantize).dtype).toBe('qint8');
  });

  it('the march passes sit between the fake-quant insertion and the checks', () => {
    const names = DEFAULT_PREPARE_PASSES.map((p) => p.name);
    expect(names[0]).toBe('march-rewrites');
    expect(names.indexOf('swap-qat-modules')).toBe(1);
    expect(names.indexOf('composite-rewrites')).toBeGreaterThan(names.indexOf('insert-activation-fake-quant'));
    expect(names.indexOf('march-passes')).toBeGreaterThan(names.indexOf('composite-rewrites'));
    expect(names.indexOf('march-passes')).toBeLessThan(names.indexOf('check-quant-stub'));
  });

  it('a malformed hook list is refused when the march registers', () => {
    expect(() =>
      marches.register({
        apiVersion: 1,
        id: 'test-bad-hooks',
        capabilities: BERNOULLI2_CAPABILITIES,
        hooks: { preparePasses: [{ name: 'no-run' } as unknown as MarchPreparePass] },
      }),
    ).toThrow(/hooks\.preparePasses must be an array of \{ name, run/);
  });
});

class DivNet extends Module {
  readonly qx = new QuantStub();
  readonly qy = new QuantStub();
  readonly dequant = new DeQuantStub();
  forward(a: Tensor, b: Tensor): Tensor {
    return this.dequant.call(div(this.qx.call(a), this.qy.call(b)));
  }
}

describe('composite ops follow the table', () => {
  it("div is decomposed wherever the table marks Div 'composite' (qint8 reciprocal without qint16), kept elsewhere", () => {
    const march = testMarch(
      'test-div-composite',
      tableWith((ops) => [...ops, { op: 'Div', impl: 'composite', constraints: [] }]),
    );
    const y = randn([4, 8], { generator: new Generator(22) })
      .abs()
      .add(0.5);
    const decomposed = calibratedQat(new DivNet(), { global: defaultQatQconfig }, [[x, y]], { prepare: { march } });
    const targets = decomposed.graph.nodes.map((n) => n.target);
    expect(decomposed.graph.nodes.some((n) => n.method === 'div' || n.target === 'div')).toBe(false);
    expect(targets).toEqual(expect.arrayContaining(['reciprocal', 'mul']));
    const r = decomposed.graph.nodes.find((n) => n.target === 'reciprocal')!;
    expect((decomposed.getSubmodule([...r.users][0]!.target) as FakeQuantize).dtype).toBe('qint8');
    const kept = calibratedQat(new DivNet(), { global: defaultQatQconfig }, [[x, y]], {
      prepare: { march: 'bernoulli2' },
    });
    // fusion turns the functional div into a FloatFunctional call; on a table without a composite Div it stays
    expect(kept.graph.nodes.some((n) => n.method === 'div')).toBe(true);
  });

  describe('a composite op registered by a third party', () => {
    /** tanh(x) = 2·σ(2x) − 1, the sigmoid through its own fake-quant. */
    class TanhViaSigmoid extends Module {
      readonly step: QatStep;
      constructor(step: StepFakeQuant) {
        super();
        this.step = step();
        this.registerModule('sigmoid_fake_quant', this.step);
      }
      forward(v: Tensor): Tensor {
        return sub(mul(this.step.call(sigmoid(mul(v, 2))), 2), 1);
      }
    }
    let built = 0;
    const rule: ConvertRule = {
      name: 'composite:tanh-via-sigmoid',
      ops: ['Tanh'],
      match: (ctx) => ctx.module instanceof TanhViaSigmoid,
      build(ctx) {
        built++;
        const input = ctx.qparamsOf(ctx.node.args[0] as never)!;
        const out = ctx.outputQparams!;
        const sIn = Math.fround(input.scale[0]!);
        const sOut = Math.fround(out.scale[0]!);
        const plan = planTable(nonlinear.tanh, sIn, 'qint8', sOut, 'qint8', 'even');
        const module = new FixedTableOp({
          label: 'tanh-via-sigmoid',
          inDtype: 'qint8',
          inScale: sIn,
          outScale: sOut,
          outDtype: 'qint8',
          plans: [plan],
        });
        return { module, outputQparams: out };
      },
    };
    const entry: CompositeOp = {
      op: 'Tanh',
      qatForm: (m: Module, step: StepFakeQuant) => (m instanceof Tanh ? new TanhViaSigmoid(step) : null),
      rule,
    };
    compositeOps.register(entry);
    afterAll(() => compositeOps.unregister('Tanh'));

    it("prepare builds its QAT form and convert uses its rule where the table marks the op 'composite'", () => {
      const march = testMarch(
        'test-tanh-composite',
        tableWith((ops) => ops.map((o) => (o.op === 'Tanh' ? { ...o, impl: 'composite' } : o))),
      );
      const qat = calibratedQat(new SingleOpNet(new Tanh()), { global: defaultQatQconfig }, [x], {
        prepare: { march },
      });
      expect((qat.getSubmodule('op') as QatModule).module).toBeInstanceOf(TanhViaSigmoid);
      const fixed = convertFx(qat, { march, onWarning: () => {} });
      expect(built).toBe(1);
      expect(fixed.modules().some((m) => m instanceof FixedTableOp && m.config.label === 'tanh-via-sigmoid')).toBe(
        true,
      );
      // the 256-entry table is exact per input: within one output step of the QAT model
      expect(maxSteps(callModel(qat, x), callModel(fixed, x), outputStep(qat), true)).toBeLessThanOrEqual(1);
    });

    it("a table that runs the op another way ('table') keeps the plain module and its own rule", () => {
      const qat = calibratedQat(new SingleOpNet(new Tanh()), { global: defaultQatQconfig }, [x], {
        prepare: { march: 'bernoulli2' },
      });
      expect((qat.getSubmodule('op') as QatModule).module).toBeInstanceOf(Tanh);
      const before = built;
      convertFx(qat, { march: 'bernoulli2', onWarning: () => {} });
      expect(built).toBe(before);
    });
  });
});
