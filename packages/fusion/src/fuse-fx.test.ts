import { deserializeGraphModule, GraphModule, graphModuleToJson, symbolicTrace } from '@qtk/ir';
import {
  BatchNorm1d,
  BatchNorm2d,
  Conv2d,
  FloatFunctional,
  Identity,
  Linear,
  Module,
  ReLU,
  Sequential,
  Sigmoid,
} from '@qtk/nn';
import { fusionPatterns, type FusionPatternV1 } from '@qtk/spec';
import { add, Generator, randn, type Tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { fuseFx } from './fuse-fx.js';
import { ConvAddReLU2d, FusedConvBase, LinearAddReLU } from './fused-modules.js';
import { randomizeBatchNorm } from './testing/combo-net.js';
import { expectClose } from './testing/expect-close.js';

const g = new Generator(3);
const conv = (cin = 3, cout = 4) => new Conv2d(cin, cout, 3, { padding: 1, generator: g });
function bn(n = 4): BatchNorm2d {
  const b = new BatchNorm2d(n);
  randomizeBatchNorm(b, g);
  return b;
}

/** Two functional adds, a FloatFunctional add, convs in a Sequential, a shared ReLU (torchvision's BasicBlock style). */
class Net extends Module {
  readonly conv1 = conv();
  readonly bn1 = bn();
  readonly block = new Sequential(conv(4, 4), bn());
  readonly conv2 = conv(4, 4);
  readonly conv3 = conv(4, 4);
  readonly bn3 = bn();
  readonly skip = new FloatFunctional();
  readonly relu = new ReLU();
  forward(x: Tensor): Tensor {
    const a = this.relu.call(this.bn1.call(this.conv1.call(x))); // conv2d_bn_relu, ReLU shared → _generated_relu_0
    const b = add(this.block.call(a), a); // block.0-block.1 + a: conv2d_bn_add → _generated_add_0
    const c = add(a, this.conv2.call(b)); // conv2d_add_conv_second → _generated_add_1
    return this.relu.call(this.skip.add(this.bn3.call(this.conv3.call(c)), b)); // conv2d_bn_add_relu: sits at the add's name, skip
  }
}

describe('fuseFx', () => {
  it('fuses at the add: functional adds become _generated_add_N (fused there), a FloatFunctional add keeps its name, a shared ReLU root gives _generated_relu_N; absorbed modules become Identity', () => {
    const model = new Net().eval();
    const x = randn([2, 3, 6, 6], { generator: g });
    const expected = model.call(x);
    let applied: readonly { rule: string; nodes: readonly string[] }[] = [];
    const gm = fuseFx(model, { onFused: (a) => (applied = a) });
    expect(applied.map((a) => a.rule)).toEqual([
      'conv2d_bn_relu',
      'conv2d_bn_add',
      'conv2d_add_conv_second',
      'conv2d_bn_add_relu',
    ]);
    const calls = gm.graph
      .findNodes({ op: 'call_module' })
      .map((n) => `${n.name}=${n.target}(${n.args.map(String).join(', ')})`);
    expect(calls).toEqual([
      '_generated_relu_0=_generated_relu_0(x)',
      '_generated_add_0=_generated_add_0(_generated_relu_0, _generated_relu_0)',
      '_generated_add_1=_generated_add_1(_generated_add_0, _generated_relu_0)',
      'skip=skip(_generated_add_1, _generated_add_0)',
    ]);
    // the first ReLU call was fused while the module still served the second call; the second fusion then made it Identity
    for (const name of ['conv1', 'bn1', 'block.0', 'block.1', 'conv2', 'conv3', 'bn3', 'relu'])
      expect(gm.getSubmodule(name), name).toBeInstanceOf(Identity);
    expect(gm.getSubmodule('skip')).toBeInstanceOf(ConvAddReLU2d);
    expect(model.relu).toBeInstanceOf(ReLU);
    expect(model.skip).toBeInstanceOf(FloatFunctional);
    const f = gm.getSubmodule('_generated_add_1') as ConvAddReLU2d;
    expect([f.withAdd, f.convFirst, f.activation]).toEqual([true, false, null]);
    expect((gm.getSubmodule('skip') as ConvAddReLU2d).activation).toBe('relu');
    expectClose(gm.call(x), expected);
    expect(Object.keys(gm.stateDict().tensors)).toContain('skip.conv.weight');
  });

  it('returns a new GraphModule: the input model and GraphModule are unchanged; untouched modules and BN-free convs are shared', () => {
    const model = new Net().eval();
    const traced = symbolicTrace(model);
    const before = traced.printTabular();
    const w1 = model.conv1.weight.values().slice();
    const gm = fuseFx(traced);
    expect(gm).not.toBe(traced);
    expect(traced.printTabular()).toBe(before);
    expect(model.conv1).toBeInstanceOf(Conv2d);
    expect(traced.getSubmodule('block.0')).toBe(model.block.at(0));
    expect(model.block.at(0)).toBeInstanceOf(Conv2d);
    expect([...model.conv1.weight.values()]).toEqual([...w1]);
    // the Sequential on the path of a replaced module is a copy
    expect(gm.getSubmodule('block')).not.toBe(model.block);
    // conv2 had no BN: the fused module holds the very same conv (weight and bias shared)
    expect((gm.getSubmodule('_generated_add_1') as ConvAddReLU2d).conv).toBe(model.conv2);
    // conv1 absorbed bn1: a copy of the conv with new weight and bias
    const c1 = (gm.getSubmodule('_generated_relu_0') as ConvAddReLU2d).conv;
    expect(c1).not.toBe(model.conv1);
    expect(c1.weight).not.toBe(model.conv1.weight);
    expect(c1.stride).toEqual(model.conv1.stride);
    expect(traced.getSubmodule('relu')).toBe(model.relu);
    expect(traced.getSubmodule('conv1')).toBe(model.conv1);
  });

  it('leaves alone what cannot be fused: an output used twice, a conv called twice, a BN without running stats, a scalar add', () => {
    class Cases extends Module {
      readonly c1 = conv();
      readonly b1 = bn();
      readonly shared = conv(4, 4);
      readonly b2 = bn();
      readonly c3 = conv(4, 4);
      readonly b3 = new BatchNorm2d(4, { trackRunningStats: false });
      readonly c4 = conv(4, 4);
      readonly r = new ReLU();
      forward(x: Tensor): Tensor[] {
        const y = this.c1.call(x);
        const z = this.b1.call(y); // y also returned: not fused
        const s = this.r.call(this.b2.call(this.shared.call(z))); // shared conv: not fused
        const t = this.shared.call(s);
        const u = this.b3.call(this.c3.call(t));
        const v = add(this.c4.call(u), 1); // scalar other: conv2d_add declined
        x.mul(2); // a dead node: fusion leaves it (no dead-code elimination beyond the matches)
        return [y, v];
      }
    }
    const model = new Cases().eval();
    let applied: readonly unknown[] = [];
    const x = randn([1, 3, 4, 4], { generator: g });
    const expected = model.call(x);
    const gm = fuseFx(model, { onFused: (a) => (applied = a) });
    expect(applied).toEqual([]);
    // only the functional ops became generated modules (the scalar add, the dead mul)
    expect(gm.printTabular()).toBe(fuseFx(model, { patterns: [] }).printTabular());
    expect(
      gm.graph
        .findNodes({ op: 'call_module' })
        .filter((n) => n.target.startsWith('_generated_'))
        .map((n) => `${n.target}.${n.method}`),
    ).toEqual(['_generated_add_0.add', '_generated_mul_0.mul']);
    const out = gm.call(x) as Tensor[];
    expectClose(out[1]!, expected[1]!);
  });

  it('a FloatFunctional called twice keeps serving its other call; a conv whose weight is read elsewhere is not fused', () => {
    class Twice extends Module {
      readonly c = conv();
      readonly skip = new FloatFunctional();
      readonly d = conv(4, 4);
      readonly bd = bn();
      forward(x: Tensor, y: Tensor): Tensor {
        const a = this.skip.add(this.c.call(x), y);
        const b = this.bd.call(this.d.call(a));
        return this.skip.add(b, this.d.weight.sum());
      }
    }
    const model = new Twice().eval();
    const x = randn([1, 3, 4, 4], { generator: g });
    const y = randn([1, 4, 4, 4], { generator: g });
    // the tracer turns `this.d.weight.sum()` into a constant; read d.weight in the graph itself
    const traced = symbolicTrace(model);
    const out = traced.graph.outputNode!;
    const w = traced.graph.insertingBefore(out, () => traced.graph.getAttr('d.weight'));
    out.args = [[out.args[0], w]];
    let applied: readonly { rule: string }[] = [];
    const gm = fuseFx(traced, { onFused: (a) => (applied = a) });
    expect(applied.map((a) => a.rule)).toEqual(['conv2d_add']);
    expect(gm.graph.node('_generated_add_0')?.target).toBe('_generated_add_0');
    expect(gm.getSubmodule('skip')).toBe(model.skip);
    expect(gm.getSubmodule('d')).toBe(model.d);
    const [got, weight] = gm.call(x, y) as Tensor[];
    expectClose(got!, model.call(x, y));
    expect(weight).toBe(model.d.weight);
    expect(fuseFx(model).getSubmodule('skip')).toBeInstanceOf(ConvAddReLU2d); // without the get_attr, d-bd-skip.add fuses
  });

  it('fuses Linear-BN1d-ReLU in a classifier head and keeps eval outputs; a model in training mode is fused with running stats', () => {
    class Head extends Module {
      readonly fc = new Linear(5, 4, { generator: g });
      readonly bn = new BatchNorm1d(4);
      readonly act = new ReLU();
      forward(x: Tensor) {
        return this.act.call(this.bn.call(this.fc.call(x)));
      }
    }
    const head = new Head();
    randomizeBatchNorm(head.bn, g);
    const gm = fuseFx(head); // head is in training mode
    expect(gm.getSubmodule('act')).toBeInstanceOf(LinearAddReLU);
    expect(gm.training).toBe(true);
    const x = randn([3, 5], { generator: g });
    const mean = head.bn.runningMean!.values().slice();
    const fusedOut = gm.call(x);
    head.eval();
    expectClose(fusedOut, head.call(x)); // the fused model uses the running stats, as the unfused one in eval
    expect([...head.bn.runningMean!.values()]).toEqual([...mean]); // and does not update them
  });

  it('applies patterns registered in @qtk/spec by a third party, and patterns given explicitly', () => {
    class SigmoidConv extends Module {
      constructor(readonly inner: Conv2d) {
        super();
      }
      forward(x: Tensor) {
        return this.inner.call(x).sigmoid();
      }
    }
    const pattern: FusionPatternV1 = {
      apiVersion: 1,
      name: 'test_conv2d_sigmoid',
      pattern: [Sigmoid, Conv2d],
      createFused: (m, ctx) => new SigmoidConv(ctx.module(m.nodes[1]!) as Conv2d),
    };
    class M extends Module {
      readonly c = conv();
      readonly s = new Sigmoid();
      forward(x: Tensor) {
        return this.s.call(this.c.call(x));
      }
    }
    const model = new M();
    expect(fuseFx(model).getSubmodule('s')).toBeInstanceOf(Sigmoid);
    fusionPatterns.register(pattern);
    try {
      const gm = fuseFx(model);
      expect(gm.getSubmodule('s')).toBeInstanceOf(SigmoidConv);
      expect(gm.getSubmodule('c')).toBeInstanceOf(Identity);
      const x = randn([1, 3, 4, 4], { generator: g });
      expectClose(gm.call(x), model.call(x));
    } finally {
      fusionPatterns.unregister(pattern.name);
    }
    expect(fuseFx(model, { patterns: [pattern] }).getSubmodule('s')).toBeInstanceOf(SigmoidConv);
  });

  it('a fused GraphModule traces again with the fused modules as leaves, and fusing it again changes nothing', () => {
    const model = new Net().eval();
    const gm = fuseFx(model);
    const again = symbolicTrace(gm);
    expect(
      again.graph.findNodes({ op: 'call_module' }).every((n) => again.getSubmodule(n.target) instanceof FusedConvBase),
    ).toBe(true);
    let applied: readonly unknown[] = [1];
    const twice = fuseFx(gm, { onFused: (a) => (applied = a) });
    expect(applied).toEqual([]);
    expect(twice).toBeInstanceOf(GraphModule);
  });
});

describe('a fused GraphModule', () => {
  it('round-trips through JSON with its state dict', () => {
    const model = new Net().eval();
    const gm = fuseFx(model);
    const back = deserializeGraphModule(graphModuleToJson(gm), { stateDict: gm.stateDict() }).eval();
    expect(back.getSubmodule('skip')).toBeInstanceOf(ConvAddReLU2d);
    expect((back.getSubmodule('_generated_add_1') as ConvAddReLU2d).convFirst).toBe(false);
    const x = randn([1, 3, 5, 5], { generator: g });
    expectClose(back.call(x), gm.call(x));
  });
});
