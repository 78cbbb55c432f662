// Functional add/sub/mul/cat get generated FloatFunctional modules with stable names that qconfig dicts address.
import { defaultQat16bitQconfig, defaultQatQconfig, FakeQuantize } from '@qtk/fake-quant';
import type { ConvAddReLU2d } from '@qtk/fusion';
import type { GraphModule } from '@qtk/ir';
import '@qtk/march-bayes';
import { Conv2d, DeQuantStub, FloatFunctional, Module, QuantStub, ReLU } from '@qtk/nn';
import { add, cat, Generator, mul, randn, type Tensor } from '@qtk/tensor';
import { afterEach, describe, expect, it } from 'vitest';
import { convertFx, prepareQatFx, QatModule, resetMarch, setMarch } from './index.js';
import { FLOAT_BOUNDARY } from './stepwise-float-pass.js';
import { callModel, calibratedQat, maxSteps } from './testing/convert-harness.js';

const g = new Generator(5);

class Inner extends Module {
  readonly conv = new Conv2d(4, 4, 1, { generator: g });
  forward(x: Tensor, y: Tensor): Tensor {
    return mul(this.conv.call(x), y); // functional mul inside a submodule
  }
}

class Net extends Module {
  readonly quant = new QuantStub();
  readonly quant2 = new QuantStub();
  readonly conv = new Conv2d(3, 4, 3, { padding: 1, generator: g });
  readonly relu = new ReLU();
  readonly inner = new Inner();
  readonly diff = new FloatFunctional();
  readonly dequant = new DeQuantStub();
  forward(x: Tensor, y: Tensor): Tensor {
    const a = this.quant.call(x);
    const b = this.quant2.call(y);
    const c = this.relu.call(add(this.conv.call(a), b)); // conv + functional add + relu: fused at _generated_add_0
    const d = c.add(b); // tensor-method add: _generated_add_1
    const e = this.inner.call(d, b); // inner._generated_mul_0: a child of the module that calls it
    const f = this.diff.sub(e, d); // a FloatFunctional keeps its own name
    return this.dequant.call(cat([f, e], 1)); // _generated_cat_0
  }
}

const inputs = (seed: number): [Tensor, Tensor] => {
  const gen = new Generator(seed);
  return [randn([2, 3, 5, 5], { generator: gen }), randn([2, 4, 5, 5], { generator: gen })];
};

const generated = (qat: GraphModule) =>
  qat
    .namedModules()
    .filter(([n]) => /(^|\.)_generated_(add|sub|mul|cat)_\d+$/.test(n))
    .map(([n, m]) => `${n}:${(m instanceof QatModule ? m.module : m).constructor.name}`);

/** The activation fake-quant prepare inserted after the call of `target`. */
function outputFakeQuant(qat: GraphModule, target: string): FakeQuantize | null {
  const node = qat.graph.nodes.find((n) => n.op === 'call_module' && n.target === target)!;
  const user = [...node.users].find(
    (u) => u.op === 'call_module' && qat.getSubmodule(u.target) instanceof FakeQuantize,
  );
  return user ? (qat.getSubmodule(user.target) as FakeQuantize) : null;
}

afterEach(() => resetMarch());

describe('generated modules for functional ops', () => {
  it('every functional add/mul/cat and tensor-method add gets a _generated_<op>_<k> FloatFunctional (in the calling module, in execution order); a fused conv+add+relu sits at the add', () => {
    setMarch('bayes');
    const qat = prepareQatFx(new Net().eval(), { global: defaultQatQconfig });
    expect(generated(qat)).toEqual([
      'inner._generated_mul_0:FloatFunctional',
      '_generated_add_0:ConvAddReLU2d',
      '_generated_add_1:FloatFunctional',
      '_generated_cat_0:FloatFunctional',
    ]);
    expect(((qat.getSubmodule('_generated_add_0') as QatModule).module as ConvAddReLU2d).activation).toBe('relu');
    // the FloatFunctional keeps its name; every call is a call_module with the op as its method
    expect(
      qat.graph.nodes.filter((n) => n.op === 'call_module' && n.method).map((n) => `${n.target}.${n.method}`),
    ).toEqual(['_generated_add_1.add', 'inner._generated_mul_0.mul', 'diff.sub', '_generated_cat_0.cat']);
    expect(qat.graph.nodes.filter((n) => n.op === 'call_function' || n.op === 'call_method')).toEqual([]);
    // stable: the same model prepared again gives the same names
    expect(generated(prepareQatFx(new Net().eval(), { global: defaultQatQconfig }))).toEqual(generated(qat));
  });

  it('a qconfig moduleName entry addresses a generated module; without one it inherits from the module that called it', () => {
    setMarch('bayes');
    const qat = prepareQatFx(new Net().eval(), {
      global: defaultQatQconfig,
      moduleName: { _generated_cat_0: defaultQat16bitQconfig, _generated_add_1: null, inner: defaultQat16bitQconfig },
    });
    expect(outputFakeQuant(qat, '_generated_cat_0')!.dtype).toBe('qint16');
    // null: float (step-wise quantization); only the boundary fake-quant where its output re-enters quantized ops follows
    const add1 = qat.graph.nodes.find((n) => n.op === 'call_module' && n.target === '_generated_add_1')!;
    expect([...add1.users].map((u) => u.meta[FLOAT_BOUNDARY])).toEqual([true]);
    expect(outputFakeQuant(qat, 'inner._generated_mul_0')!.dtype).toBe('qint16'); // a child of 'inner', where it is called
    expect(outputFakeQuant(qat, 'diff')!.dtype).toBe('qint8'); // global
    // a name beats the qconfig of the module that called it
    const q2 = prepareQatFx(new Net().eval(), {
      global: defaultQatQconfig,
      moduleName: { inner: defaultQat16bitQconfig, 'inner._generated_mul_0': defaultQatQconfig },
    });
    expect(outputFakeQuant(q2, 'inner._generated_mul_0')!.dtype).toBe('qint8');
  });

  it('the prepared model with generated modules converts, within one output step of fake-quant', () => {
    setMarch('bayes');
    const batches = [1, 2, 3].map(inputs);
    const qat = calibratedQat(new Net().eval(), { global: defaultQatQconfig }, batches);
    const fixed = convertFx(qat);
    const [x, y] = inputs(9);
    const want = callModel(qat, x, y);
    const got = callModel(fixed, x, y);
    const step = outputFakeQuant(qat, '_generated_cat_0')!.calculateQparams().scale[0]!;
    expect(maxSteps(want, got, step)).toBeLessThanOrEqual(1);
    expect(fixed.namedModules().map(([n]) => n)).toEqual(
      expect.arrayContaining([
        '_generated_add_0',
        '_generated_add_1',
        'inner._generated_mul_0',
        '_generated_cat_0',
        'diff',
      ]),
    );
  });
});
