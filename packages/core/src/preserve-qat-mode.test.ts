// setPreserveQatMode as horizon_plugin_pytorch documents it: marks set on the float model survive
// prepare, prefixes reach generated functional modules and FloatFunctional calls, float types cover the
// fused modules built from them, and a `preserveQatMode = true` attribute works too.
import { defaultQatQconfig } from '@qtk/fake-quant';
import { ConvAddReLU2d } from '@qtk/fusion';
import type { GraphModule } from '@qtk/ir';
import '@qtk/march-bayes';
import { BatchNorm2d, Conv2d, DeQuantStub, FloatFunctional, Module, QuantStub, ReLU } from '@qtk/nn';
import { add, Generator, randn, type Tensor } from '@qtk/tensor';
import { afterEach, describe, expect, it } from 'vitest';
import { convertFx, QatModule, resetMarch, setMarch, setPreserveQatMode } from './index.js';
import { callModel, calibratedQat, maxSteps, outputStep, setBatchNormStats } from './testing/convert-harness.js';

const g = new Generator(21);

/** conv → bn → FloatFunctional add → relu: fuses into one ConvAddReLU2d at `add`. */
class ConvModule extends Module {
  readonly conv = new Conv2d(3, 3, 1, { generator: g });
  readonly bn = new BatchNorm2d(3);
  readonly add = new FloatFunctional();
  readonly relu = new ReLU();
  forward(x: Tensor, y: Tensor): Tensor {
    return this.relu.call(this.add.add(this.bn.call(this.conv.call(x)), y));
  }
}

class FuseNet extends Module {
  readonly quantx = new QuantStub();
  readonly quanty = new QuantStub();
  readonly convmod1 = new ConvModule();
  readonly convmod2 = new ConvModule();
  readonly conv = new Conv2d(3, 3, 1, { generator: g });
  readonly sub = new FloatFunctional();
  readonly dequant = new DeQuantStub();
  forward(x: Tensor, y: Tensor): Tensor {
    const qx = this.quantx.call(x);
    const qy = this.quanty.call(y);
    const a = this.convmod1.call(qx, qy);
    const b = this.convmod2.call(qy, a);
    const c = add(this.conv.call(b), a); // functional add, fused with conv at _generated_add_0
    return this.dequant.call(this.sub.sub(c, b));
  }
}

function model(): FuseNet {
  const m = new FuseNet();
  setBatchNormStats([m.convmod1.bn, m.convmod2.bn], 3);
  return m.eval();
}

const inputs = (seed: number): [Tensor, Tensor] => {
  const gen = new Generator(seed);
  return [randn([2, 3, 4, 4], { generator: gen }), randn([2, 3, 4, 4], { generator: gen })];
};

function prepareAndConvert(float: Module): { qat: GraphModule; fixed: GraphModule } {
  const qat = calibratedQat(float, { global: defaultQatQconfig }, [1, 2, 3].map(inputs));
  return { qat, fixed: convertFx(qat, { onWarning: () => {} }) };
}

/** Names of the modules the converted model keeps as QAT modules (or float FloatFunctionals between a dequantize and a quantize). */
function preservedIn(fixed: GraphModule): string[] {
  return fixed.graph.nodes
    .filter(
      (n) =>
        n.op === 'call_module' &&
        n.inputNodes.some(
          (i) => i.op === 'call_module' && fixed.getSubmodule(i.target).constructor.name === 'Dequantize',
        ),
    )
    .map((n) => n.target);
}

/** Every preserved node sits between dequantize and quantize, and the model still agrees with fake-quant. */
function expectRuns(qat: GraphModule, fixed: GraphModule): void {
  const [x, y] = inputs(40);
  const want = callModel(qat, x, y);
  const got = callModel(fixed, x, y);
  const steps = maxSteps(want, got, outputStep(qat));
  expect(steps).toBeLessThanOrEqual(1);
}

afterEach(() => resetMarch());

describe('setPreserveQatMode', () => {
  it('a prefix set on the float model survives prepare: the container and all it holds stay QAT, the fused module sits at `add`', () => {
    setMarch('bayes');
    const float = model();
    setPreserveQatMode(float, ['convmod1']);
    const { qat, fixed } = prepareAndConvert(float);
    expect((qat.getSubmodule('convmod1.add') as QatModule).module).toBeInstanceOf(ConvAddReLU2d);
    const kept = fixed.getSubmodule('convmod1.add');
    expect(kept).toBeInstanceOf(QatModule);
    expect((kept as QatModule).module).toBeInstanceOf(ConvAddReLU2d);
    expect(fixed.getSubmodule('convmod2.add')).not.toBeInstanceOf(QatModule);
    expect(preservedIn(fixed)).toEqual(['convmod1.add']);
    expectRuns(qat, fixed);
  });

  it('`module.preserveQatMode = true` on the float model works the same', () => {
    setMarch('bayes');
    const float = model();
    (float.convmod2 as unknown as { preserveQatMode: boolean }).preserveQatMode = true;
    const { qat, fixed } = prepareAndConvert(float);
    expect(preservedIn(fixed)).toEqual(['convmod2.add']);
    expect(((fixed.getSubmodule('convmod2.add') as QatModule).module as ConvAddReLU2d).activation).toBe('relu');
    expectRuns(qat, fixed);
  });

  it('float types cover the fused modules built from them: Conv2d marks every conv-based module, BatchNorm2d marks none', () => {
    setMarch('bayes');
    const byConv = model();
    setPreserveQatMode(byConv, [], [Conv2d]);
    const { qat, fixed } = prepareAndConvert(byConv);
    expect(preservedIn(fixed).sort()).toEqual(['_generated_add_0', 'convmod1.add', 'convmod2.add']);
    expectRuns(qat, fixed);
    const byBn = model();
    setPreserveQatMode(byBn, [], [BatchNorm2d]);
    expect(preservedIn(prepareAndConvert(byBn).fixed)).toEqual([]);
  });

  it('prefixes reach generated functional modules and FloatFunctional calls, and the converted model runs (no "FloatFunctional is not meant to be called")', () => {
    setMarch('bayes');
    const float = model();
    setPreserveQatMode(float, ['_generated_add_0', 'sub']); // _generated_add_0 exists only after prepare
    const { qat, fixed } = prepareAndConvert(float);
    expect(preservedIn(fixed).sort()).toEqual(['_generated_add_0', 'sub']);
    const subNode = fixed.graph.nodes.find((n) => n.op === 'call_module' && n.target === 'sub')!;
    expect(subNode.method).toBe('sub');
    expect(fixed.getSubmodule('sub')).toBeInstanceOf(FloatFunctional);
    expectRuns(qat, fixed);
  });

  it('on the prepared model: FloatFunctional by type, a generated name by prefix; value false undoes it', () => {
    setMarch('bayes');
    const qat = calibratedQat(model(), { global: defaultQatQconfig }, [1, 2].map(inputs));
    expect(setPreserveQatMode(qat, [], [FloatFunctional]).sort()).toEqual(['sub']); // the only FloatFunctional left unfused
    const bySub = convertFx(qat);
    expect(preservedIn(bySub)).toEqual(['sub']);
    expectRuns(qat, bySub); // the FloatFunctional runs its method, not forward
    setPreserveQatMode(qat, [], [FloatFunctional], false);
    expect(setPreserveQatMode(qat, ['_generated_add_0'])[0]).toBe('_generated_add_0');
    const fixed = convertFx(qat);
    expect(preservedIn(fixed)).toEqual(['_generated_add_0']);
    expectRuns(qat, fixed);
  });
});
