// Options keyed by module name refuse a name that matches no module, naming the closest ones.
import { defaultQatOutQconfig, defaultQatQconfig } from '@qtk/fake-quant';
import '@qtk/march-bayes';
import { BatchNorm2d, Conv2d, DeQuantStub, Module, QuantStub, ReLU } from '@qtk/nn';
import { Generator, type Tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { prepareQatFx, setPreserveQatMode, UnknownModuleNameError } from './index.js';
import { isPreserveQatMode } from './preserve-qat-mode.js';
import { thrownBy } from './testing/convert-harness.js';

class Net extends Module {
  readonly quant = new QuantStub({ scale: 1 / 128 });
  readonly conv1 = new Conv2d(1, 4, 3, { padding: 1, generator: new Generator(1) });
  readonly bn1 = new BatchNorm2d(4);
  readonly relu1 = new ReLU();
  readonly conv2 = new Conv2d(4, 4, 1, { generator: new Generator(2) });
  readonly dequant = new DeQuantStub();
  forward(x: Tensor): Tensor {
    const a = this.relu1.call(this.bn1.call(this.conv1.call(this.quant.call(x))));
    return this.dequant.call(this.conv2.call(a).add(a));
  }
}

const quiet = { march: 'bayes', onWarning: () => {} };

describe('qconfigDict.moduleName entries must name a module', () => {
  it('a typo is an UnknownModuleNameError (a QConfigError) naming the entry and the closest names', () => {
    const err = thrownBy(() =>
      prepareQatFx(new Net().eval(), { global: defaultQatQconfig, moduleName: { conv3: defaultQatOutQconfig } }, quiet),
    );
    expect(err).toBeInstanceOf(UnknownModuleNameError);
    const e = err as UnknownModuleNameError;
    expect(e.code).toBe('E_UNKNOWN_MODULE_NAME');
    expect(e.entry).toBe('conv3');
    expect(e.closest).toEqual(['conv1', 'conv2']);
    expect(e.message).toMatch(
      /^qconfigDict\.moduleName entry 'conv3' matches no module name of the model, so it would change nothing; closest: conv1, conv2; use a module path/,
    );
  });

  it('names of the model before fusion (bn1, absorbed into relu1), after it and generated ones are accepted', () => {
    const moduleName = { bn1: defaultQatQconfig, conv1: defaultQatQconfig, _generated_add_0: defaultQatOutQconfig };
    const gm = prepareQatFx(new Net().eval(), { global: defaultQatQconfig, moduleName }, quiet);
    expect(gm.namedModules().some(([n]) => n === '_generated_add_0')).toBe(true);
  });
});

describe('setPreserveQatMode names and class names must match a module', () => {
  it('on the float model, prepareQatFx refuses an unknown prefix (names made by prepare are fine)', () => {
    const ok = new Net().eval();
    setPreserveQatMode(ok, ['_generated_add_0', 'conv2']);
    const gm = prepareQatFx(ok, { global: defaultQatQconfig }, quiet);
    expect(isPreserveQatMode(gm.getSubmodule('conv2'))).toBe(true);

    const typo = new Net().eval();
    setPreserveQatMode(typo, ['conv_2']);
    const e = thrownBy(() => prepareQatFx(typo, { global: defaultQatQconfig }, quiet)) as UnknownModuleNameError;
    expect(e).toBeInstanceOf(UnknownModuleNameError);
    expect(e.option).toBe('setPreserveQatMode prefixes');
    expect(e.closest[0]).toBe('conv2');
  });

  it('on a prepared model an unknown prefix or class name is refused at once', () => {
    const gm = prepareQatFx(new Net().eval(), { global: defaultQatQconfig }, quiet);
    expect(() => setPreserveQatMode(gm, ['relu9'])).toThrow(
      /setPreserveQatMode prefixes entry 'relu9' matches no module name of the model.*closest: relu1/,
    );
    const e = thrownBy(() => setPreserveQatMode(gm, [], ['Conv2D'])) as UnknownModuleNameError;
    expect(e.message).toMatch(/^setPreserveQatMode types entry 'Conv2D' matches no module class of the model/);
    expect(e.closest).toContain('Conv2d');
    expect(setPreserveQatMode(gm, [], ['Conv2d'])).toContain('relu1');
  });
});
