// biome-ignore-all lint/suspicious/noExplicitAny: the tests corrupt decoded JSON configs field by field with deliberately wrong types; no static type fits.
// Model files whose CRC is right but whose module configs are bad (hand-edited, or written by
// broken code) are refused at load with a typed error naming the module, the codec and the field,
// instead of loading and failing at the first inference.
import '@qtk/march-bayes';
import { defaultQat16bitQconfig, defaultQatOutQconfig, defaultQatQconfig, setFakeQuantize } from '@qtk/fake-quant';
import '@qtk/fusion';
import { ModuleConfigError, moduleCodecs, symbolicTrace, type GraphModule } from '@qtk/ir';
import { Conv2d, Module } from '@qtk/nn';
import { add, Generator, rand, randn, relu, type Tensor } from '@qtk/tensor';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { editModelFileGraph } from './testing/model-file-bytes.js';
import { z } from 'zod';
import {
  calibrate,
  convertFx,
  modelFromBytes,
  ModelFileError,
  modelToBytes,
  prepareQatFx,
  resetMarch,
  setMarch,
} from './index.js';
import '@qtk/march-bernoulli2';
import { calibratedQat, callModel, setBatchNormStats } from './testing/convert-harness.js';
import { ConvClassifier, LayerNormSoftmax, SingleOpNet } from '@qtk/test-models';

const x = rand([2, 2, 5, 5], { generator: new Generator(3) });

function net(): ConvClassifier {
  const m = new ConvClassifier();
  setBatchNormStats([m.bn], 5);
  return m.eval();
}
const qat = (): GraphModule =>
  calibratedQat(net(), { global: defaultQatQconfig, moduleName: { fc: defaultQatOutQconfig } }, [x]);

type Entry = { path: string; type: string; config: any };

/** The file with one module's config edited and the CRC recomputed, so only config validation can refuse it. */
function corrupt(
  bytes: Uint8Array,
  where: { path?: string; type?: string },
  edit: (config: any, entry: Entry) => unknown,
): Uint8Array {
  return editModelFileGraph<{ modules: Entry[] }>(bytes, (graph) => {
    const entry = graph.modules.find(
      (e) => (where.path === undefined || e.path === where.path) && (where.type === undefined || e.type === where.type),
    );
    if (!entry)
      throw new Error(
        `no module ${JSON.stringify(where)} in ${graph.modules.map((e) => `${e.path}:${e.type}`).join(', ')}`,
      );
    const replaced = edit(entry.config, entry);
    if (replaced !== undefined) entry.config = replaced;
  });
}

/** Loading fails with a ModelFileError naming the file, the module, its codec and the field. */
function expectRefused(bytes: Uint8Array, path: string, codec: string, field: string | RegExp): void {
  let err: unknown;
  try {
    modelFromBytes(bytes, 'net.qtkm');
  } catch (e) {
    err = e;
  }
  expect(err, 'the file loaded').toBeInstanceOf(ModelFileError);
  const message = (err as Error).message;
  expect(message).toContain('net.qtkm');
  expect(message).toContain(`module '${path}' (${codec}): bad config field '`);
  if (typeof field === 'string') expect(message).toContain(`bad config field '${field}'`);
  else expect(message).toMatch(field);
  expect((err as Error).cause).toBeInstanceOf(ModuleConfigError);
}

describe('model files with bad module configs are refused at load', () => {
  it('every registered codec has a zod schema, and registering one without is refused', () => {
    const names = moduleCodecs.list();
    for (const name of [
      'Conv2d',
      'FixedConv',
      'FakeQuantize',
      'QatModule',
      'SoftmaxQat',
      'LayerNormQat',
      'ConvAddReLU2d',
    ])
      expect(names).toContain(name);
    expect(names.filter((n) => !(moduleCodecs.get(n).schema instanceof z.ZodType))).toEqual([]);
    class Unchecked extends Module {
      forward(): null {
        return null;
      }
    }
    expect(() =>
      moduleCodecs.register({ cls: Unchecked, config: () => null, create: () => new Unchecked() } as never),
    ).toThrow(/'Unchecked' has no zod schema/);
  });

  describe('nn layers (@qtk/ir codecs)', () => {
    const good = modelToBytes(symbolicTrace(net()));
    it('the unedited file loads and runs', () => {
      expect(Array.from(callModel(modelFromBytes(good).model, x).values()).every(Number.isFinite)).toBe(true);
    });
    it.each([
      [
        'fc',
        'Linear',
        'inFeatures',
        (c: any) => {
          c.inFeatures = '4';
        },
      ],
      ['fc', 'Linear', 'bias', (c: any) => void delete c.bias],
      [
        'conv',
        'Conv2d',
        'stride',
        (c: any) => {
          c.stride = [1];
        },
      ],
      [
        'conv',
        'Conv2d',
        'groups',
        (c: any) => {
          c.groups = 3;
        },
      ],
      [
        'conv',
        'Conv2d',
        'padding.0',
        (c: any) => {
          c.padding = [-1, 1];
        },
      ],
      [
        'bn',
        'BatchNorm2d',
        'eps',
        (c: any) => {
          c.eps = null;
        },
      ],
      [
        'flatten',
        'Flatten',
        'startDim',
        (c: any) => {
          c.startDim = 0.5;
        },
      ],
      ['relu', 'ReLU', '(config)', () => ({ inplace: true })],
      // sizes that would allocate gigabytes before the state dict is compared
      ['fc', 'Linear', 'inFeatures', (c: any) => void Object.assign(c, { inFeatures: 100_000, outFeatures: 100_000 })],
      [
        'conv',
        'Conv2d',
        'inChannels/outChannels/kernelSize',
        (c: any) => void Object.assign(c, { kernelSize: [3000, 3000] }),
      ],
      [
        'bn',
        'BatchNorm2d',
        'numFeatures',
        (c: any) => {
          c.numFeatures = 1e9;
        },
      ],
      // sizes that would make the first run allocate without bound (CONFIG_LIMITS)
      [
        'gap',
        'AdaptiveAvgPool2d',
        'outputSize',
        (c: any) => {
          c.outputSize = 1e9;
        },
      ],
      [
        'conv',
        'Conv2d',
        'padding.1',
        (c: any) => {
          c.padding = [1, 100_000];
        },
      ],
    ])("'%s' (%s) with a bad %s", (path, codec, field, edit) => {
      expectRefused(corrupt(good, { path }, edit), path, codec, field);
    });
  });

  describe('fake-quants, QAT modules and fused modules (@qtk/fake-quant, core, @qtk/fusion codecs)', () => {
    const good = modelToBytes(qat());
    it('the unedited file loads and runs', () => {
      expect(Array.from(callModel(modelFromBytes(good).model, x).values()).every(Number.isFinite)).toBe(true);
    });
    it.each([
      [
        'relu.weightFakeQuant',
        'FakeQuantize',
        'options.dtype',
        (c: any) => {
          c.options.dtype = 'qint64';
        },
      ],
      [
        'relu.weightFakeQuant',
        'FakeQuantize',
        'options.chAxis',
        (c: any) => {
          c.options.chAxis = 'zero';
        },
      ],
      [
        'relu.weightFakeQuant',
        'FakeQuantize',
        'options.quantMax',
        (c: any) => Object.assign(c.options, { quantMin: 10, quantMax: -10 }) && undefined,
      ],
      [
        'relu.activationPostProcess',
        'FakeQuantize',
        'state',
        (c: any) => {
          c.state = 'TRAINING';
        },
      ],
      [
        'quant',
        'QatModule',
        'training',
        (c: any) => {
          c.training = 'yes';
        },
      ],
      [
        'relu.module',
        'ConvAddReLU2d',
        'activation',
        (c: any) => {
          c.activation = 'gelu';
        },
      ],
      [
        'relu.module',
        'ConvAddReLU2d',
        'conv.kernelSize (Conv2d)',
        (c: any) => {
          c.conv.kernelSize = [3];
        },
      ],
      [
        'relu.module',
        'ConvAddReLU2d',
        'conv.inChannels/outChannels/kernelSize (Conv2d)',
        (c: any) => {
          c.conv.outChannels = 4096;
        },
      ],
      [
        'relu.weightFakeQuant',
        'FakeQuantize',
        'options.numChannels',
        (c: any) => {
          c.options.numChannels = 1e9;
        },
      ],
    ])("'%s' (%s) with a bad %s", (path, codec, field, edit) => {
      expectRefused(corrupt(good, { path }, edit), path, codec, field);
    });
  });

  describe('SoftmaxQat / LayerNormQat and FixedSoftmax / FixedLayerNorm', () => {
    let qatBytes: Uint8Array;
    let fixedBytes: Uint8Array;
    beforeAll(() => {
      setMarch('bayes');
      const gm = prepareQatFx(new LayerNormSoftmax().eval(), { global: defaultQat16bitQconfig }, { march: 'bayes' });
      calibrate(gm, [randn([4, 6], { generator: new Generator(4) })]);
      setFakeQuantize(gm, 'VALIDATION');
      qatBytes = modelToBytes(gm);
      fixedBytes = modelToBytes(convertFx(gm, { onWarning: () => {} }), { march: 'bayes' });
    });
    afterAll(() => resetMarch());
    it('bad step and float configs', () => {
      const soft = (b: Uint8Array, edit: (c: any) => unknown) => corrupt(b, { type: 'SoftmaxQat' }, edit);
      const path = (b: Uint8Array, type: string) => {
        let p = '';
        corrupt(b, { type }, (_, e) => {
          p = e.path;
        });
        return p;
      };
      const sp = path(qatBytes, 'SoftmaxQat');
      expectRefused(
        soft(qatBytes, (c) => void delete c.steps.exp),
        sp,
        'SoftmaxQat',
        'steps.exp',
      );
      expectRefused(
        soft(qatBytes, (c) => {
          c.dim = 'last';
        }),
        sp,
        'SoftmaxQat',
        'dim',
      );
      expectRefused(
        soft(qatBytes, (c) => {
          c.steps.sum.options.observer = '';
        }),
        sp,
        'SoftmaxQat',
        'steps.sum.options.observer (FakeQuantize)',
      );
      const lp = path(qatBytes, 'LayerNormQat');
      expectRefused(
        corrupt(qatBytes, { type: 'LayerNormQat' }, (c) => {
          c.float.eps = -1;
        }),
        lp,
        'LayerNormQat',
        'float.eps (LayerNorm)',
      );
      const fs = path(fixedBytes, 'FixedSoftmax');
      expectRefused(
        corrupt(fixedBytes, { type: 'FixedSoftmax' }, (c) => {
          c.exp.entries = { $typed: 'Int16Array', values: [1, 2] };
        }),
        fs,
        'FixedSoftmax',
        /bad config field 'exp/,
      );
      const fl = path(fixedBytes, 'FixedLayerNorm');
      expectRefused(
        corrupt(fixedBytes, { type: 'FixedLayerNorm' }, (c) => {
          c.features = 7;
        }),
        fl,
        'FixedLayerNorm',
        /bad config field 'affine\.(weight|bias)'|bad config field 'out'/,
      );
    });
  });

  describe('fixed-point modules (@qtk/fixed-point codecs)', () => {
    const good = modelToBytes(convertFx(qat(), { march: 'bayes', onWarning: () => {} }), { march: 'bayes' });
    it('the unedited file loads and runs', () => {
      expect(Array.from(callModel(modelFromBytes(good).model, x).values()).every(Number.isFinite)).toBe(true);
    });
    const typed = (values: number[]) => ({ $typed: 'Int32Array', values });
    it.each([
      [
        'quant',
        'Quantize',
        'dtype',
        (c: any) => {
          c.dtype = 'qint4';
        },
      ],
      [
        'quant',
        'Quantize',
        'scale',
        (c: any) => {
          c.scale = 0;
        },
      ],
      [
        'relu',
        'FixedConv',
        'bias',
        (c: any) => {
          c.bias = typed([1, 2, 3]);
        },
      ],
      [
        'relu',
        'FixedConv',
        'bias',
        (c: any) => {
          c.bias = { $typed: '__proto__', values: [] };
        },
      ],
      [
        'relu',
        'FixedConv',
        'requant.n',
        (c: any) => {
          c.requant.n = typed([0]);
        },
      ],
      [
        'relu',
        'FixedConv',
        'requant.pre',
        (c: any) => {
          c.requant.pre = typed([0, 0, 99, 0]);
        },
      ],
      [
        'relu',
        'FixedConv',
        'attrs.stride',
        (c: any) => {
          c.attrs.stride = [1];
        },
      ],
      [
        'relu',
        'FixedConv',
        'weightShape',
        (c: any) => {
          c.weightShape = [4e6, 4e6, 3, 3];
        },
      ],
      [
        'relu',
        'FixedConv',
        'weightShape',
        (c: any) => {
          c.weightShape = [4, 2, 300, 300];
        },
      ],
      [
        'fc',
        'FixedConv',
        'outScale',
        (c: any) => {
          c.outScale = { $typed: 'Float32Array', values: [1, 2] };
        },
      ],
      [
        'gap',
        'FixedAvgPool2d',
        'outScale',
        (c: any) => {
          c.outScale = -1;
        },
      ],
      [
        'gap',
        'FixedAvgPool2d',
        'windows.kind',
        (c: any) => {
          c.windows.kind = 'global';
        },
      ],
      // 1e9 windows: the first run ran out of memory (a JS heap crash) before this check
      [
        'gap',
        'FixedAvgPool2d',
        'windows.outputSize.1',
        (c: any) => {
          c.windows.outputSize = [1, 1e9];
        },
      ],
      [
        'flatten',
        'FixedValueOp',
        'target.module.config.startDim (Flatten)',
        (c: any) => {
          c.target.module.config.startDim = 'x';
        },
      ],
      [
        'flatten',
        'FixedValueOp',
        'target.name',
        () => ({ target: { kind: 'function', name: 'noSuchOp' }, label: 'flatten', output: null }),
      ],
      [
        'flatten',
        'FixedValueOp',
        'target.name',
        () => ({ target: { kind: 'method', name: 'constructor' }, label: 'flatten', output: null }),
      ],
    ])("'%s' (%s) with a bad %s", (path, codec, field, edit) => {
      expectRefused(corrupt(good, { path }, edit), path, codec, field);
    });
  });
});

describe('add plans saved before they stopped naming their planner', () => {
  it.each(['bayes', 'bernoulli2'] as const)(
    "a %s model file with version-1 add plans ('rule': the march) loads with identical integers",
    (march) => {
      const v = randn([2, 8], { generator: new Generator(11) });
      const model = new SingleOpNet((q) => add(q, relu(q)));
      const fixed = convertFx(calibratedQat(model, { global: defaultQatQconfig }, [v]), { march, onWarning: () => {} });
      const bytes = modelToBytes(fixed, { march });
      let before: unknown = null;
      const old = corrupt(bytes, { type: 'FixedAdd' }, (c) => {
        before = structuredClone(c.plan);
        expect(c.plan.version).toBe(2);
        c.plan.version = 1;
        c.plan.rule = march;
      });
      const loaded = modelFromBytes(old).model;
      const add2 = loaded.modules().find((m) => m.constructor.name === 'FixedAdd') as unknown as {
        config: { plan: unknown };
      };
      expect(add2.config.plan).toEqual(before);
      expect(Array.from(callModel(loaded, v).values())).toEqual(Array.from(callModel(fixed, v).values()));
    },
  );
});

describe('saving refuses what loading would refuse', () => {
  it('a module whose settings fail its codec schema (a conv padding over CONFIG_LIMITS) is refused at save, naming it', () => {
    class Padded extends Module {
      readonly conv = new Conv2d(1, 1, 1, { padding: 2000 });
      forward(x: Tensor): Tensor {
        return this.conv.call(x);
      }
    }
    expect(() => modelToBytes(symbolicTrace(new Padded()))).toThrow(
      /saveModelFile: module 'conv' \(Conv2d\) has settings its codec refuses at load \(field 'padding\.0'/,
    );
  });
});
