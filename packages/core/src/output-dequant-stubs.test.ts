import { getDefaultQconfig } from '@qtk/fake-quant';
import { QTensor } from '@qtk/fixed-point';
import { type GraphModule, symbolicTrace } from '@qtk/ir';
import { Conv2d, DeQuantStub, Flatten, Linear, Module, QuantStub, ReLU } from '@qtk/nn';
import { Generator, rand, type Tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import '@qtk/march-bayes';
import { calibrate, convertFx, prepareQatFx, type PrepareQatFxOptions } from './index.js';

/** A graph without stubs, as importOnnx gives: conv → relu → flatten → linear, returning (logits, features). */
class NoStubs extends Module {
  readonly conv: Conv2d;
  readonly relu = new ReLU();
  readonly flat = new Flatten();
  readonly fc: Linear;
  constructor(g: Generator) {
    super();
    this.conv = new Conv2d(1, 3, 3, { padding: 1, generator: g });
    this.fc = new Linear(3 * 6 * 6, 5, { generator: g });
  }
  forward(x: Tensor): [Tensor, Tensor] {
    const features = this.flat.call(this.relu.call(this.conv.call(x)));
    return [this.fc.call(features), features];
  }
}

const g = new Generator(3);
const float = symbolicTrace(new NoStubs(g)).eval();
const calib = [rand([8, 1, 6, 6], { low: -1, high: 1, generator: g })];
const x = rand([4, 1, 6, 6], { low: -1, high: 1, generator: g });

function fixedWith(options: Partial<PrepareQatFxOptions>): GraphModule {
  const qat = prepareQatFx(
    float,
    { global: getDefaultQconfig() },
    { march: 'bayes', inputQuantStubs: { scale: 1 / 128 }, onWarning: () => {}, ...options },
  );
  calibrate(qat, calib);
  return convertFx(qat, { onWarning: () => {} });
}

describe('output DeQuantStubs', () => {
  it('are on by default with inputQuantStubs: the outputs are float, equal to the dequantized integers', () => {
    const [logits, features] = fixedWith({}).call(x) as [Tensor, Tensor];
    const [qLogits, qFeatures] = fixedWith({ outputDeQuantStubs: false }).call(x) as [QTensor, QTensor];
    expect(qLogits).toBeInstanceOf(QTensor);
    expect(logits.dtype).toBe('float32');
    expect(features.dtype).toBe('float32');
    expect([...logits.values()]).toEqual([...qLogits.dequantize().values()]);
    expect([...features.values()]).toEqual([...qFeatures.dequantize().values()]);
    // the float outputs take tensor methods, as the float model's do
    const top = logits.argmax(1).values();
    const ints = qLogits.ints();
    for (let r = 0; r < 4; r++) {
      const row = Array.from({ length: 5 }, (_, c) => ints[r * 5 + c]!);
      expect(top[r]).toBe(row.indexOf(Math.max(...row)));
    }
  });

  it('one stub per distinct output; none before an output a DeQuantStub already computes', () => {
    const qat = prepareQatFx(
      float,
      { global: getDefaultQconfig() },
      { march: 'bayes', inputQuantStubs: true, onWarning: () => {} },
    );
    const out = qat.graph.outputNode!;
    expect(out.inputNodes.map((n) => n.target)).toEqual(['_generated_dequant_stub_0', '_generated_dequant_stub_1']);
    expect(qat.getSubmodule('_generated_dequant_stub_0')).toBeInstanceOf(DeQuantStub);

    class Stubbed extends Module {
      readonly quant = new QuantStub({ scale: 1 / 128 });
      readonly fc = new Linear(4, 2, { generator: g });
      readonly dequant = new DeQuantStub();
      forward(x: Tensor): [Tensor, Tensor] {
        const y = this.dequant.call(this.fc.call(this.quant.call(x)));
        return [y, y];
      }
    }
    const stubbed = prepareQatFx(
      new Stubbed(),
      { global: getDefaultQconfig() },
      { march: 'bayes', outputDeQuantStubs: true, onWarning: () => {} },
    );
    expect(stubbed.graph.nodes.filter((n) => n.target.includes('dequant')).map((n) => n.target)).toEqual(['dequant']);
  });

  it('a graph without QuantStubs: the error names the inputQuantStubs option', () => {
    expect(() => prepareQatFx(float, { global: getDefaultQconfig() }, { march: 'bayes' })).toThrow(
      new RegExp(
        "graph input '(\\w+)' reaches 'relu' \\(ConvAddReLU2d\\) without passing a QuantStub; the model has no QuantStub \\(an imported ONNX graph has none\\): " +
          'pass prepareQatFx\\(model, qconfigDict, \\{ inputQuantStubs: \\{ scale: 1 / 128 \\} \\}\\) to put one after every graph input .*' +
          "or add a QuantStub to the model and call it on '\\1'$",
      ),
    );
    // a model with a QuantStub that one input bypasses: the stub is the fix
    class Bypass extends Module {
      readonly quant = new QuantStub({ scale: 1 / 128 });
      readonly fc = new Linear(4, 2, { generator: g });
      forward(x: Tensor, y: Tensor): Tensor {
        return this.fc.call(this.quant.call(x)).add(this.fc.call(y));
      }
    }
    expect(() => prepareQatFx(new Bypass(), { global: getDefaultQconfig() }, { march: 'bayes' })).toThrow(
      /graph input 'y' reaches '.*' \(.*\) without passing a QuantStub; add a QuantStub to the model and call it on 'y'/,
    );
  });
});
