import { BatchNorm2d, Conv2d, deepCopy, FloatFunctional, Identity, Module, ReLU, Sequential } from '@qtk/nn';
import { add, conv2d, Generator, RegistryError, randn, relu, tensor, type Tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { PatternError } from './errors.js';
import type { GraphModule } from './graph-module.js';
import { anyOf, MatchAll, matchPattern, patternSize, subclassOf, type Pattern } from './pattern.js';
import { applyRules, findMatches, RuleTable, type RewriteRule } from './rewrite.js';
import { symbolicTrace } from './symbolic-trace.js';
import { ModelForFusion, TestFuseNet } from './testing/seed-models.js';

const adds = anyOf(add, 'add', FloatFunctional.prototype.add);

/** Residual block: conv-bn-relu, conv-bn, shortcut conv-bn, x.add(s), relu (the reference network's block). */
class Block extends Module {
  readonly conv1: Conv2d;
  readonly bn1 = new BatchNorm2d(4);
  readonly relu1 = new ReLU();
  readonly conv2: Conv2d;
  readonly bn2 = new BatchNorm2d(4);
  readonly short: Sequential;
  readonly relu2 = new ReLU();
  constructor(g: Generator) {
    super();
    this.conv1 = new Conv2d(2, 4, 3, { padding: 1, bias: false, generator: g });
    this.conv2 = new Conv2d(4, 4, 3, { padding: 1, bias: false, generator: g });
    this.short = new Sequential(new Conv2d(2, 4, 1, { bias: false, generator: g }), new BatchNorm2d(4));
  }
  forward(x: Tensor): Tensor {
    const y = this.bn2.call(this.conv2.call(this.relu1.call(this.bn1.call(this.conv1.call(x)))));
    return this.relu2.call(y.add(this.short.call(x)));
  }
}

/** Conv with BN folded in, then optionally + other and ReLU (what a fusion pass would build). */
class FusedConv extends Module {
  readonly weight: Tensor;
  readonly bias: Tensor;
  constructor(
    readonly conv: Conv2d,
    bn: BatchNorm2d,
    readonly withRelu: boolean,
  ) {
    super();
    const gamma = bn.weight!.values();
    const beta = bn.bias!.values();
    const mean = bn.runningMean!.values();
    const v = bn.runningVar!.values();
    const w = conv.weight.values();
    const per = w.length / conv.outChannels;
    const fw = new Float32Array(w.length);
    const fb = new Float32Array(conv.outChannels);
    for (let o = 0; o < conv.outChannels; o++) {
      const s = gamma[o]! / Math.sqrt(v[o]! + bn.eps);
      for (let i = 0; i < per; i++) fw[o * per + i] = w[o * per + i]! * s;
      fb[o] = beta[o]! - mean[o]! * s + (conv.bias ? conv.bias.values()[o]! * s : 0);
    }
    this.weight = tensor(fw, conv.weight.shape);
    this.bias = tensor(fb, [conv.outChannels]);
  }
  forward(x: Tensor, other?: Tensor): Tensor {
    const c = this.conv;
    let y = conv2d(x, this.weight, this.bias, {
      stride: c.stride,
      padding: c.padding,
      dilation: c.dilation,
      groups: c.groups,
    });
    if (other) y = add(y, other);
    return this.withRelu ? relu(y) : y;
  }
}

/** Rewrites conv(-bn)(-add)(-relu): the conv node, moved to the root's place, calls a FusedConv; the rest become Identity. */
function fuseRule(name: string, pattern: Pattern): RewriteRule {
  return {
    name,
    pattern,
    // a conv module called from several places (TestFuseNet's sharedConv) cannot absorb one BN
    when: (match, ctx) =>
      ctx.graph.findNodes({ op: 'call_module', target: match.nodes[match.nodes.length - 1]!.target }).length === 1,
    apply(match, ctx) {
      const conv = match.nodes[match.nodes.length - 1]!;
      const bn = match.nodes.find((n) => n.op === 'call_module' && ctx.module(n) instanceof BatchNorm2d)!;
      const withRelu = ctx.module(match.root) instanceof ReLU;
      const other = match.captures[0];
      ctx.gm.setSubmodule(
        conv.target,
        new FusedConv(ctx.module(conv) as Conv2d, ctx.module(bn) as BatchNorm2d, withRelu),
      );
      for (const n of match.nodes)
        if (n !== conv && n.op === 'call_module' && n.method === undefined)
          ctx.gm.setSubmodule(n.target, new Identity());
      match.root.prepend(conv);
      conv.args = other === undefined ? [conv.args[0]] : [conv.args[0], other];
      match.root.replaceAllUsesWith(conv);
    },
  };
}

const fusionTable = () =>
  new RuleTable('test-fusion', [
    fuseRule('conv_bn', [BatchNorm2d, Conv2d]),
    fuseRule('conv_bn_relu', [ReLU, [BatchNorm2d, Conv2d]]),
    fuseRule('conv_bn_add_relu', [ReLU, [adds, [BatchNorm2d, Conv2d], MatchAll]]),
  ]);

function traceEval<M extends Module>(m: M): { model: M; gm: GraphModule } {
  // running stats away from 0/1 so folding matters
  for (const bn of m.modules()) {
    if (bn instanceof BatchNorm2d) {
      bn.runningMean!.values().forEach((_, i, a) => {
        a[i] = 0.1 * (i + 1);
      });
      bn.runningVar!.values().forEach((_, i, a) => {
        a[i] = 0.5 + 0.25 * i;
      });
    }
  }
  m.eval();
  return { model: deepCopy(m), gm: symbolicTrace(m) };
}

function close(a: Tensor, b: Tensor, tol = 1e-5) {
  const x = a.values();
  const y = b.values();
  expect(y.length).toBe(x.length);
  for (let i = 0; i < x.length; i++) expect(Math.abs(x[i]! - y[i]!)).toBeLessThanOrEqual(tol * (1 + Math.abs(x[i]!)));
}

describe('patterns', () => {
  it('match module classes, registered functions, method names and FloatFunctional methods; MatchAll captures', () => {
    const { gm } = traceEval(new Block(new Generator(0)));
    const root = gm.graph.node('relu2')!;
    const m = matchPattern(root, [ReLU, [adds, [BatchNorm2d, Conv2d], MatchAll]], gm)!;
    expect(m.nodes.map((n) => n.name)).toEqual(['relu2', 'add', 'bn2', 'conv2']);
    expect(m.captures).toEqual([gm.graph.node('short_1')]);
    expect(matchPattern(root, [ReLU, ['add', MatchAll, [BatchNorm2d, Conv2d]]], gm)!.nodes.map((n) => n.name)).toEqual([
      'relu2',
      'add',
      'short_1',
      'short_0',
    ]);
    expect(matchPattern(root, [ReLU, [add, MatchAll, MatchAll]], gm)).toBeNull(); // x.add(s) is a call_method, not the function
    expect(matchPattern(root, [ReLU, [FloatFunctional.prototype.add, MatchAll, MatchAll]], gm)).toBeNull();
    expect(matchPattern(root, [subclassOf(Module), MatchAll], gm)).not.toBeNull();
    expect(matchPattern(root, [ReLU, ['add', MatchAll]], gm)).toBeNull(); // argument count must agree

    const ff = symbolicTrace(new TestFuseNet(3, new Generator(1)));
    const r = ff.graph.node('convmod1_reluMod')!;
    expect(
      matchPattern(r, [ReLU, [FloatFunctional.prototype.add, [BatchNorm2d, Conv2d], MatchAll]], ff)!.nodes.map(
        (n) => n.name,
      ),
    ).toEqual(['convmod1_reluMod', 'convmod1_add_add', 'convmod1_bnMod', 'convmod1_conv2d']);
    expect(
      matchPattern(ff.graph.node('relu')!, [ReLU, [FloatFunctional.prototype.sub, BatchNorm2d, BatchNorm2d]], ff),
    ).not.toBeNull();

    const fn = symbolicTrace(new ModelForFusion(new Generator(2)));
    expect(matchPattern(fn.graph.node('relu')!, [ReLU, [add, [BatchNorm2d, Conv2d], MatchAll]], fn)!.captures).toEqual([
      fn.graph.node('quanty'),
    ]);
    expect(patternSize([ReLU, [adds, [BatchNorm2d, Conv2d], MatchAll]])).toBe(4);
  });

  it('an inner node with another user does not match (the match could not be replaced)', () => {
    class Twice extends Module {
      readonly conv = new Conv2d(1, 1, 1, { generator: new Generator(3) });
      readonly bn = new BatchNorm2d(1);
      readonly relu = new ReLU();
      forward(x: Tensor) {
        const c = this.conv.call(x);
        return [this.relu.call(this.bn.call(c)), c];
      }
    }
    const gm = symbolicTrace(new Twice());
    expect(matchPattern(gm.graph.node('relu')!, [ReLU, [BatchNorm2d, Conv2d]], gm)).toBeNull();
    expect(matchPattern(gm.graph.node('relu')!, [ReLU, [BatchNorm2d, MatchAll]], gm)).not.toBeNull();
  });
});

describe('rule tables', () => {
  it('find non-overlapping matches, longest pattern first', () => {
    const { gm } = traceEval(new Block(new Generator(4)));
    const found = findMatches(gm, fusionTable()).map(
      ({ rule, match }) => `${rule.name}:${match.nodes.map((n) => n.name).join(',')}`,
    );
    expect(found).toEqual([
      'conv_bn_add_relu:relu2,add,bn2,conv2',
      'conv_bn:short_1,short_0',
      'conv_bn_relu:relu1,bn1,conv1',
    ]);
    expect(
      fusionTable()
        .ordered()
        .map((r) => r.name),
    ).toEqual(['conv_bn_add_relu', 'conv_bn_relu', 'conv_bn']);
  });

  it('rewrite a residual block into fused convs with the same outputs', () => {
    const { model, gm } = traceEval(new Block(new Generator(5)));
    const applied = applyRules(gm, fusionTable());
    expect(applied.map((a) => a.rule)).toEqual(['conv_bn_relu', 'conv_bn', 'conv_bn_add_relu']);
    expect(gm.printTabular()).toBe(
      [
        'opcode       name     target   args              kwargs',
        '-----------  -------  -------  ----------------  ------',
        'placeholder  x        x        ()                {}',
        'call_module  conv1    conv1    (x,)              {}',
        'call_module  short_0  short.0  (x,)              {}',
        'call_module  conv2    conv2    (conv1, short_0)  {}',
        'output       output   output   (conv2,)          {}',
      ].join('\n'),
    );
    expect(gm.getSubmodule('bn2')).toBeInstanceOf(Identity);
    const x = randn([2, 2, 5, 5], { generator: new Generator(6) });
    close(model.call(x), gm.call(x));
  });

  it('fuses FloatFunctional adds and functional adds the same way', () => {
    for (const net of [new TestFuseNet(3, new Generator(7)), new ModelForFusion(new Generator(8))]) {
      const { model, gm } = traceEval(net);
      const applied = applyRules(gm, fusionTable());
      const g = new Generator(9);
      const [x, y] =
        net instanceof TestFuseNet
          ? [randn([1, 3, 4, 4], { generator: g }), randn([1, 3, 4, 4], { generator: g })]
          : [randn([1, 3, 6, 6], { generator: g }), randn([1, 3, 4, 4], { generator: g })];
      close(model.call(x!, y!), gm.call(x!, y!));
      expect(applied.filter((a) => a.rule === 'conv_bn_add_relu')).toHaveLength(net instanceof TestFuseNet ? 3 : 1);
      if (net instanceof TestFuseNet) expect(gm.graph.findNodes({ target: 'bn1' })).toHaveLength(1); // shared conv left alone
    }
  });

  it('run to a fixpoint, and give up on rules that never settle', () => {
    const { gm } = traceEval(new Block(new Generator(10)));
    let flips = 0;
    const flip: RewriteRule = {
      name: 'flip',
      pattern: ReLU,
      apply(match) {
        flips++;
        match.root.updateArg(0, match.root.args[0]);
      },
    };
    expect(() => applyRules(gm, [flip], { fixpoint: true, maxPasses: 5 })).toThrow(PatternError);
    expect(flips).toBe(10);
    const once: RewriteRule = { name: 'once', pattern: ReLU, apply: () => false };
    expect(applyRules(gm, [once], { fixpoint: true })).toEqual([]);
  });

  it('tables refuse duplicate names and malformed patterns', () => {
    const t = fusionTable();
    expect(() => t.register({ name: 'conv_bn', pattern: ReLU, apply: () => {} })).toThrow(RegistryError);
    expect(() => t.register({ name: 'conv_bn', pattern: ReLU, apply: () => {} })).toThrow(/already registered/);
    expect(() => t.register({ name: 'bad', pattern: [] as unknown as Pattern, apply: () => {} })).toThrow(PatternError);
    expect(() => t.register({ name: 'bad2', pattern: [ReLU, 42 as unknown as Pattern], apply: () => {} })).toThrow(
      /expected a module class/,
    );
    expect(() => t.get('nope')).toThrow(RegistryError);
    expect(() => t.get('nope')).toThrow(/named 'nope'; registered: conv_bn, conv_bn_relu, conv_bn_add_relu/);
  });
});
