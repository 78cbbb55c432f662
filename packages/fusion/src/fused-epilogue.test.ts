import { Conv2d, Linear } from '@qtk/nn';
import { add, conv2d, Generator, profileOps, randn, relu, relu6, type Tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { ConvAddReLU2d, LinearAddReLU } from './index.js';

// A fused Conv2d module runs conv, add and activation as one ConvEpilogue op, with the same values as the
// three ops; a hook on the inner conv (which must run) or a layer other than a conv keeps the separate ops.

const bits = (t: Tensor) => Array.from(new Uint32Array((t.values() as Float32Array).slice().buffer));
const opsOf = (f: () => unknown) => profileOps(f).timings.map((t) => t.op);

function setup() {
  const g = new Generator(3);
  const conv = new Conv2d(4, 6, 3, { padding: 1, generator: g });
  const x = randn([2, 4, 8, 8], { generator: g });
  const other = randn([2, 6, 8, 8], { generator: g });
  return { conv, x, other };
}

describe('fused conv modules run one ConvEpilogue op', () => {
  it('conv + add + ReLU and conv + ReLU6: one op, the same bits as the separate ops', () => {
    const { conv, x, other } = setup();
    const withAdd = new ConvAddReLU2d(conv, { withAdd: true, convFirst: false, activation: 'relu' });
    expect(opsOf(() => withAdd.call(x, other))).toEqual(['ConvEpilogue']);
    expect(bits(withAdd.call(x, other))).toEqual(
      bits(relu(add(other, conv2d(x, conv.weight, conv.bias, { padding: 1 })))),
    );
    const clipped = new ConvAddReLU2d(conv, { activation: 'relu6' });
    expect(opsOf(() => clipped.call(x))).toEqual(['ConvEpilogue']);
    expect(bits(clipped.call(x))).toEqual(bits(relu6(conv2d(x, conv.weight, conv.bias, { padding: 1 }))));
  });

  it('a hook on the inner conv runs, so the ops stay separate; a plain conv without add or activation is just Conv', () => {
    const { conv, x, other } = setup();
    const fused = new ConvAddReLU2d(conv, { withAdd: true, activation: 'relu' });
    const expected = bits(fused.call(x, other));
    let seen = 0;
    const handle = conv.registerForwardHook(() => {
      seen++;
    });
    expect(opsOf(() => fused.call(x, other)).sort()).toEqual(['Add', 'Conv', 'Relu']);
    expect(seen).toBe(1);
    expect(bits(fused.call(x, other))).toEqual(expected);
    handle.remove();
    expect(opsOf(() => new ConvAddReLU2d(conv).call(x))).toEqual(['Conv']);
  });

  it('a Linear keeps its separate ops', () => {
    const g = new Generator(4);
    const fused = new LinearAddReLU(new Linear(5, 3, { generator: g }), { activation: 'relu' });
    expect(opsOf(() => fused.call(randn([2, 5], { generator: g })))).not.toContain('ConvEpilogue');
  });
});
