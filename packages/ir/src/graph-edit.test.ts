// horizon_plugin_pytorch's graph edit: insert a color-space conversion right after the QuantStub node of a traced
// model, reroute its users, recompile and run.
import { BatchNorm2d, Conv2d, deepCopy, Module, QuantStub, ReLU } from '@qtk/nn';
import { Generator, randn, type Tensor, tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { registerTraceable, symbolicTrace } from './symbolic-trace.js';

/** Centered YUV (full swing) to RGB, per pixel of an [N, 3, H, W] tensor. */
const centeredYuvToRgb = registerTraceable(
  'centeredYuvToRgb',
  (x: Tensor, options: { swing: 'full' | 'studio' }): Tensor => {
    if (options.swing !== 'full') throw new Error('only full swing here');
    const [n, , h, w] = x.shape as number[];
    const src = x.values();
    const out = new Float32Array(src.length);
    const plane = h! * w!;
    for (let b = 0; b < n!; b++) {
      const o = b * 3 * plane;
      for (let i = 0; i < plane; i++) {
        const y = src[o + i]!;
        const u = src[o + plane + i]!;
        const v = src[o + 2 * plane + i]!;
        out[o + i] = y + 1.402 * v;
        out[o + plane + i] = y - 0.344136 * u - 0.714136 * v;
        out[o + 2 * plane + i] = y + 1.772 * u;
      }
    }
    return tensor(out, x.shape);
  },
);

class Net extends Module {
  readonly quant = new QuantStub();
  readonly conv = new Conv2d(3, 3, 3, { generator: new Generator(0) });
  readonly bn = new BatchNorm2d(3);
  readonly relu = new ReLU();
  forward(input: Tensor): Tensor {
    let x = this.quant.call(input);
    x = this.conv.call(x);
    x = this.bn.call(x);
    return this.relu.call(x);
  }
}

describe('graph edit after tracing', () => {
  it('the conversion itself is right on a hand-computed pixel', () => {
    const rgb = centeredYuvToRgb(tensor([10, 20, -30], [1, 3, 1, 1]), { swing: 'full' });
    expect(Array.from(rgb.values())).toEqual(
      [10 + 1.402 * -30, 10 - 0.344136 * 20 - 0.714136 * -30, 10 + 1.772 * 20].map(Math.fround),
    );
  });

  it('inserts a call_function after the QuantStub node, replaces its uses, recompiles and runs', () => {
    const net = new Net().eval();
    const reference = deepCopy(net);
    const traced = symbolicTrace(net);
    expect(traced.printTabular()).toBe(
      [
        'opcode       name    target  args      kwargs',
        '-----------  ------  ------  --------  ------',
        'placeholder  input   input   ()        {}',
        'call_module  quant   quant   (input,)  {}',
        'call_module  conv    conv    (quant,)  {}',
        'call_module  bn      bn      (conv,)   {}',
        'call_module  relu    relu    (bn,)     {}',
        'output       output  output  (relu,)   {}',
      ].join('\n'),
    );

    for (const n of traced.graph.nodes) {
      if (n.target === 'quant') {
        traced.graph.insertingAfter(n, () => {
          const converted = traced.graph.callFunction(centeredYuvToRgb, [n], { swing: 'full' });
          n.replaceAllUsesWith(converted);
          converted.args = [n]; // as in horizon_plugin_pytorch (replaceAllUsesWith already leaves it alone)
        });
      }
    }
    traced.recompile();
    expect(traced.printTabular()).toBe(
      [
        'opcode         name              target            args                 kwargs',
        '-------------  ----------------  ----------------  -------------------  -----------------',
        'placeholder    input             input             ()                   {}',
        'call_module    quant             quant             (input,)             {}',
        "call_function  centeredYuvToRgb  centeredYuvToRgb  (quant,)             {'swing': 'full'}",
        'call_module    conv              conv              (centeredYuvToRgb,)  {}',
        'call_module    bn                bn                (conv,)              {}',
        'call_module    relu              relu              (bn,)                {}',
        'output         output            output            (relu,)              {}',
      ].join('\n'),
    );

    const x = randn([2, 3, 5, 5], { generator: new Generator(1) }).mul(50);
    const got = traced.call(x);
    const want = reference.call(centeredYuvToRgb(x, { swing: 'full' }));
    expect(Array.from(got.values())).toEqual(Array.from(want.values()));
    // and the edit changed the result (it is not the unconverted model)
    const unconverted = reference.call(x);
    expect(Array.from(got.values())).not.toEqual(Array.from(unconverted.values()));
  });
});
