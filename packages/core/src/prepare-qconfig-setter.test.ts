import { defaultQatOutQconfig, defaultQatQconfig, FakeQuantize } from '@qtk/fake-quant';
import type { GraphModule } from '@qtk/ir';
import { marches, QConfigError } from '@qtk/spec';
import { InvalidArgumentError } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import '@qtk/march-bayes';
import '@qtk/march-bernoulli2';
import {
  activationFakeQuantOf,
  calibrate,
  defaultQconfigSetter,
  int16ActivationSetter,
  prepareQatFx,
  QatModule,
  type QconfigSetterContext,
  withActivationDtype,
} from './index.js';
import { imageBatches, ResidualSigmoidNet, SharedHeadNet, SharedSigmoidNet } from '@qtk/test-models';

/** Every call node of the fused ResidualSigmoidNet that gets an output fake-quant under an int8 qconfig. */
const QUANTIZED = ['quant', 'relu0', '_generated_add_0', 'conv2', 'act', 'pool'];

const dtypes = (gm: GraphModule, names: readonly string[]) =>
  Object.fromEntries(names.map((n) => [n, activationFakeQuantOf(gm, n)?.dtype ?? null]));

const quiet = { onWarning: () => {} };

describe('prepareQatFx with qconfigSetter', () => {
  it('the default template: int8 everywhere, the fc feeding the DeQuantStub a high-precision output', () => {
    const warnings: string[] = [];
    const gm = prepareQatFx(new ResidualSigmoidNet().eval(), {
      march: 'bayes',
      qconfigSetter: [defaultQconfigSetter()],
      onWarning: (m) => warnings.push(m),
    });
    expect(dtypes(gm, [...QUANTIZED, 'fc'])).toEqual({
      quant: 'qint8',
      relu0: 'qint8',
      _generated_add_0: 'qint8',
      conv2: 'qint8',
      act: 'qint8',
      pool: 'qint8',
      fc: null,
    });
    const fc = gm.getSubmodule('fc') as QatModule;
    expect(fc).toBeInstanceOf(QatModule);
    expect(fc.weightFakeQuant?.dtype).toBe('qint8');
    // the output-precision guard has nothing to say
    expect(warnings.filter((w) => w.includes('output layer'))).toEqual([]);
  });

  it('the default template computes what the equivalent qconfig dict computes', () => {
    const batches = imageBatches(1, 3);
    const viaSetter = prepareQatFx(new ResidualSigmoidNet(), {
      march: 'bayes',
      qconfigSetter: [defaultQconfigSetter()],
      ...quiet,
    });
    const viaDict = prepareQatFx(
      new ResidualSigmoidNet(),
      { global: defaultQatQconfig, moduleName: { fc: defaultQatOutQconfig } },
      { march: 'bayes', ...quiet },
    );
    calibrate(viaSetter, batches, quiet);
    calibrate(viaDict, batches, quiet);
    const x = imageBatches(9, 1)[0]!;
    const a = (viaSetter as unknown as { call(x: unknown): { values(): Float32Array } }).call(x).values();
    const b = (viaDict as unknown as { call(x: unknown): { values(): Float32Array } }).call(x).values();
    expect(Array.from(a)).toEqual(Array.from(b));
  });

  it('a fc output a quantized op also reads stays int8; high precision needs a march that has it', () => {
    const gm = prepareQatFx(new SharedHeadNet().eval(), {
      march: 'bayes',
      qconfigSetter: [defaultQconfigSetter()],
      ...quiet,
    });
    expect(dtypes(gm, ['conv', 'fc', 'act'])).toEqual({ conv: 'qint8', fc: 'qint8', act: 'qint8' });
    const noInt32 = { ...marches.get('bayes'), id: 'bayes-no-int32' };
    Object.assign(noInt32, { capabilities: { ...noInt32.capabilities, highPrecisionOutputDtypes: [] } });
    const plain = prepareQatFx(new ResidualSigmoidNet().eval(), {
      march: noInt32,
      qconfigSetter: [defaultQconfigSetter()],
      ...quiet,
    });
    expect(activationFakeQuantOf(plain, 'fc')?.dtype).toBe('qint8');
  });

  it('setters apply in order: a later user setter overrides a template, an earlier one is overridden', () => {
    const actInt8 = (ctx: QconfigSetterContext) => {
      ctx.setQconfig('act', withActivationDtype(ctx.qconfigOf('act')!, 'qint8'));
    };
    const last = prepareQatFx(new ResidualSigmoidNet().eval(), {
      march: 'bayes',
      qconfigSetter: [defaultQconfigSetter(), int16ActivationSetter(), actInt8],
      ...quiet,
    });
    expect(dtypes(last, QUANTIZED)).toEqual({
      quant: 'qint16',
      relu0: 'qint16',
      _generated_add_0: 'qint16',
      conv2: 'qint16',
      act: 'qint8',
      pool: 'qint16',
    });
    const first = prepareQatFx(new ResidualSigmoidNet().eval(), {
      march: 'bayes',
      qconfigSetter: [defaultQconfigSetter(), actInt8, int16ActivationSetter()],
      ...quiet,
    });
    expect(activationFakeQuantOf(first, 'act')?.dtype).toBe('qint16');
  });

  it('a setter may return node name → qconfig; null leaves a node float', () => {
    const gm = prepareQatFx(new ResidualSigmoidNet().eval(), {
      march: 'bayes',
      qconfigSetter: [
        defaultQconfigSetter(),
        () => ({ pool: null, conv2: withActivationDtype(defaultQatQconfig, 'qint16') }),
      ],
      ...quiet,
    });
    expect(gm.getSubmodule('pool')).not.toBeInstanceOf(QatModule);
    expect(activationFakeQuantOf(gm, 'pool')).toBeNull();
    expect(activationFakeQuantOf(gm, 'conv2')?.dtype).toBe('qint16');
    expect(activationFakeQuantOf(gm, 'act')?.dtype).toBe('qint8');
  });

  it('the context lists the fused nodes with their ops, paths and weights, and knows the march', () => {
    let seen: QconfigSetterContext | null = null;
    prepareQatFx(new ResidualSigmoidNet().eval(), {
      march: 'bernoulli2',
      qconfigSetter: [
        (ctx) => {
          seen = ctx;
          return undefined;
        },
      ],
      ...quiet,
    });
    const ctx = seen as unknown as QconfigSetterContext;
    expect(ctx.march.id).toBe('bernoulli2');
    expect(ctx.capabilities.activationDtypes).toEqual(['qint8']);
    expect(ctx.nodes.map((n) => [n.name, n.op, n.weighted])).toEqual([
      ['quant', null, false],
      ['relu0', 'Conv', true],
      ['_generated_add_0', 'Conv', true],
      ['conv2', 'Conv', true],
      ['act', 'Sigmoid', false],
      ['pool', 'AdaptiveAveragePool', false],
      ['flatten', 'Flatten', false],
      ['fc', 'Gemm', true],
      ['dequant', null, false],
    ]);
    expect(ctx.nodes.find((n) => n.name === 'flatten')?.ownOutputScale).toBe(false);
    // without a setter touching it, a node has the base dict's qconfig ({ global: defaultQatQconfig })
    expect(ctx.qconfigOf('fc')).toBe(defaultQatQconfig);
    expect(ctx.exampleInputs).toBeNull();
  });

  it('shapeOf runs the model once on exampleInputs', () => {
    const shapes: Record<string, readonly number[] | null> = {};
    let runs = 0;
    const x = imageBatches(2, 1, 5)[0]!;
    prepareQatFx(new ResidualSigmoidNet().eval(), {
      march: 'bayes',
      exampleInputs: x,
      qconfigSetter: [
        (ctx) => {
          for (const n of ['relu0', 'pool', 'flatten', 'fc']) shapes[n] = ctx.shapeOf(n);
          runs++;
          return undefined;
        },
      ],
      ...quiet,
    });
    expect(runs).toBe(1);
    expect(shapes).toEqual({ relu0: [5, 6, 6, 6], pool: [5, 8, 1, 1], flatten: [5, 8], fc: [5, 4] });
  });

  it('bad input gives typed errors that say what to do', () => {
    const model = new ResidualSigmoidNet().eval();
    const setter = (f: (ctx: QconfigSetterContext) => unknown) => [defaultQconfigSetter(), f as () => undefined];
    // an unknown node name, naming the setter and listing the nodes
    expect(() =>
      prepareQatFx(model, {
        march: 'bayes',
        qconfigSetter: setter(function pinHead(ctx) {
          ctx.setQconfig('head', defaultQatQconfig);
        }),
      }),
    ).toThrow(/qconfigSetter\[1\] \(pinHead\): no node 'head' in the fused graph; its nodes are quant, relu0/);
    expect(() =>
      prepareQatFx(model, { march: 'bayes', qconfigSetter: setter(() => ({ act: { dtype: 'qint16' } })) }),
    ).toThrow(QConfigError);
    // int16 on a march without it
    expect(() =>
      prepareQatFx(model, { march: 'bernoulli2', qconfigSetter: [defaultQconfigSetter(), int16ActivationSetter()] }),
    ).toThrow(/int16ActivationSetter: march 'bernoulli2' has no qint16 activations \(it supports qint8\)/);
    // exampleInputs: tensors, one per input
    expect(() =>
      prepareQatFx(model, {
        march: 'bayes',
        exampleInputs: [1, 2] as never,
        qconfigSetter: [],
      }),
    ).toThrow(InvalidArgumentError);
    const x = imageBatches(1, 1)[0]!;
    expect(() => prepareQatFx(model, { march: 'bayes', exampleInputs: [x, x], qconfigSetter: [] })).toThrow(
      /the model takes 1 input\(s\) \(x\) but exampleInputs has 2/,
    );
    expect(() =>
      prepareQatFx(model, {
        march: 'bayes',
        qconfigSetter: [(ctx) => void ctx.shapeOf('act')],
      }),
    ).toThrow(/pass exampleInputs/);
    // the form's shape
    expect(() => prepareQatFx(model, { march: 'bayes', qconfigSetter: defaultQconfigSetter() as never })).toThrow(
      /must be an array of setters/,
    );
    expect(() => prepareQatFx(model, { march: 'bayes', qconfigSetter: [42 as never] })).toThrow(/qconfigSetter\[0\]/);
    expect(() => prepareQatFx(model, { qconfigSetter: [] } as never, { march: 'bayes' })).toThrow(
      /every option goes in the second argument/,
    );
    expect(() => prepareQatFx(model, { march: 'bayes', qconfigSetter: [defaultQconfigSetter()], passes: [] })).toThrow(
      /no 'qconfig-setters' pass/,
    );
  });

  it('an empty setter list prepares with the base qconfigDict, as the dict form does', () => {
    const gm = prepareQatFx(new ResidualSigmoidNet().eval(), {
      march: 'bayes',
      qconfigSetter: [],
      qconfigDict: { global: defaultQatQconfig, moduleName: { act: null } },
      ...quiet,
    });
    expect(activationFakeQuantOf(gm, 'act')).toBeNull();
    expect(activationFakeQuantOf(gm, 'fc')?.dtype).toBe('qint8');
    expect(gm.namedModules().filter(([, m]) => m instanceof FakeQuantize).length).toBeGreaterThan(0);
  });

  it('two calls of one module given different qconfigs: the first call decides, with a warning', () => {
    const warnings: string[] = [];
    let calls: string[] = [];
    const gm = prepareQatFx(new SharedSigmoidNet().eval(), {
      march: 'bayes',
      qconfigSetter: [
        defaultQconfigSetter(),
        (ctx) => {
          calls = ctx.nodes.filter((n) => n.path === 'act').map((n) => n.name);
          ctx.setQconfig(calls[1]!, withActivationDtype(ctx.qconfigOf(calls[1]!)!, 'qint16'));
        },
      ],
      onWarning: (m) => warnings.push(m),
    });
    expect(calls).toHaveLength(2);
    expect(activationFakeQuantOf(gm, calls[1]!)?.dtype).toBe('qint8');
    expect(
      warnings.some((w) => w.startsWith(`qconfig setters gave '${calls[1]}' another qconfig than '${calls[0]}'`)),
    ).toBe(true);
  });
});
