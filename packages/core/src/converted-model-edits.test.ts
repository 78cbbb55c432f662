// A converted model edited by hand: a float module added after convertFx gets a fixed-point QTensor and is refused
// with an error that names it and says what to do (it used to fail inside the float op with an unrelated message).
import { defaultQatQconfig } from '@qtk/fake-quant';
import '@qtk/march-bayes';
import { GraphError } from '@qtk/ir';
import { Conv2d, DeQuantStub, Module, QuantStub, ReLU, Sigmoid } from '@qtk/nn';
import { Generator, noGrad, randn, type Tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { calibrate, convertFx, prepareQatFx } from './index.js';

class Net extends Module {
  readonly quant = new QuantStub();
  readonly conv = new Conv2d(1, 2, 3, { generator: new Generator(1) });
  readonly relu = new ReLU();
  readonly dequant = new DeQuantStub();
  forward(x: Tensor): Tensor {
    return this.dequant.call(this.relu.call(this.conv.call(this.quant.call(x))));
  }
}

function converted() {
  const gm = prepareQatFx(new Net().eval(), { global: defaultQatQconfig }, { march: 'bayes', onWarning: () => {} });
  calibrate(gm, [randn([2, 1, 6, 6], { generator: new Generator(2) })], { onWarning: () => {} });
  return convertFx(gm);
}

/** Puts `module` (registered as `name`) after node `after`, in front of its users. */
function insertAfter(gm: ReturnType<typeof converted>, after: string, name: string, module: Module) {
  const node = gm.graph.node(after)!;
  gm.addSubmodule(name, module);
  const users = [...node.users];
  const added = gm.graph.insertingAfter(node, () => gm.graph.callModule(name, [node]));
  for (const u of users) u.replaceInputWith(node, added);
  return added;
}

describe('a converted model edited by hand', () => {
  it('refuses a float module given a QTensor, naming it and saying what to do', () => {
    const fixed = converted();
    insertAfter(fixed, 'relu', 'sig', new Sigmoid());
    const x = randn([2, 1, 6, 6], { generator: new Generator(3) });
    expect(() => fixed.call(x)).toThrow(GraphError);
    expect(() => fixed.call(x)).toThrow(
      /^graph node 'sig' \(Sigmoid\) was given a fixed-point QTensor, which a float module cannot take: .*add it to the float model and prepare, calibrate and convert again/,
    );
  });

  it('runs a float module after the dequantize, where values are float again', () => {
    const fixed = converted();
    const x = randn([2, 1, 6, 6], { generator: new Generator(3) });
    const before = noGrad(() => fixed.call(x)) as Tensor;
    insertAfter(fixed, 'dequant', 'sig', new Sigmoid());
    const y = noGrad(() => fixed.call(x)) as Tensor;
    expect(Array.from(y.values())).toEqual(Array.from(before.sigmoid().values()));
  });
});
