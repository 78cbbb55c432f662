import { deepCopy, Module, ReLU } from '@qtk/nn';
import { Generator, randn, tensor, type Tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { fxWrap, fxWrapMethod } from './fx-wrap.js';
import { symbolicTrace } from './symbolic-trace.js';
import { Anchors, RetinaNet, type RetinaData } from './testing/seed-models.js';

function same(a: Tensor, b: Tensor) {
  expect(Array.from(b.values())).toEqual(Array.from(a.values()));
}

function batch(g: Generator): Required<Pick<RetinaData, 'img' | 'clsTarget' | 'regTarget'>> {
  // 8x8 and 4x4 levels: 64 + 16 = 80 anchors
  return {
    img: randn([2, 1, 8, 8], { generator: g }),
    clsTarget: randn([2, 80, 3], { generator: g }),
    regTarget: randn([2, 80, 4], { generator: g }),
  };
}

describe('fxWrap: the RetinaNet-style model', () => {
  it('records the post-process as one opaque node', () => {
    const gm = symbolicTrace(new RetinaNet(3, new Generator(0)));
    expect(gm.printTabular()).toBe(
      [
        'opcode         name            target             args                                                                                                      kwargs',
        '-------------  --------------  -----------------  --------------------------------------------------------------------------------------------------------  ------',
        'placeholder    data            data               ()                                                                                                        {}',
        "call_function  getattr         getattr            (data, 'img')                                                                                             {}",
        'call_module    backbone_quant  backbone.quant     (getattr,)                                                                                                {}',
        'call_module    backbone_conv   backbone.conv      (backbone_quant,)                                                                                         {}',
        'call_module    backbone_relu   backbone.relu      (backbone_conv,)                                                                                          {}',
        'call_module    backbone_down   backbone.down      (backbone_relu,)                                                                                          {}',
        'call_module    head_cls_0      head.cls.0         (backbone_relu,)                                                                                          {}',
        'call_module    head_dequant    head.dequant       (head_cls_0,)                                                                                             {}',
        'call_module    head_cls_1      head.cls.1         (backbone_down,)                                                                                          {}',
        'call_module    head_dequant_1  head.dequant       (head_cls_1,)                                                                                             {}',
        'call_module    head_reg_0      head.reg.0         (backbone_relu,)                                                                                          {}',
        'call_module    head_dequant_2  head.dequant       (head_reg_0,)                                                                                             {}',
        'call_module    head_reg_1      head.reg.1         (backbone_down,)                                                                                          {}',
        'call_module    head_dequant_3  head.dequant       (head_reg_1,)                                                                                             {}',
        'call_module    _postProcess    self._postProcess  (data, [backbone_relu, backbone_down], [head_dequant, head_dequant_1], [head_dequant_2, head_dequant_3])  {}',
        'output         output          output             (_postProcess,)                                                                                           {}',
      ].join('\n'),
    );
    const post = gm.graph.node('_postProcess')!;
    expect([post.target, post.method, post.isImpure()]).toEqual(['', '_postProcess', true]);
    // nothing inside the wrapped method was traced
    expect(gm.graph.findNodes({ op: 'call_module', target: 'anchors' })).toHaveLength(0);
    expect(gm.graph.findNodes({ op: 'call_function', target: 'cat' })).toHaveLength(0);
  });

  it('keeps the this.training branch: eval returns detections, train returns losses with eager gradients', () => {
    const g = new Generator(1);
    const model = new RetinaNet(3, g);
    const eager = deepCopy(model);
    const gm = symbolicTrace(model);
    const data = batch(g);

    gm.eval();
    eager.eval();
    const det = gm.call({ img: data.img }) as RetinaData;
    const want = eager.call({ img: data.img }) as RetinaData;
    expect(det.img).toBe(data.img);
    expect(det.predBboxes).toEqual(want.predBboxes);
    expect(Object.keys(det)).toEqual(['img', 'predBboxes']);

    gm.train();
    eager.train();
    const losses = gm.call(data) as { clsLoss: Tensor; regLoss: Tensor };
    const wantLosses = eager.call(data) as { clsLoss: Tensor; regLoss: Tensor };
    same(wantLosses.clsLoss, losses.clsLoss);
    same(wantLosses.regLoss, losses.regLoss);
    losses.clsLoss.add(losses.regLoss).backward();
    wantLosses.clsLoss.add(wantLosses.regLoss).backward();
    const grads = (m: { parameters(): { grad: Tensor | null }[] }) =>
      m.parameters().map((p) => Array.from(p.grad!.values()));
    expect(grads(model)).toEqual(grads(eager));
  });

  it('modules used inside the wrapped method stay addressable: swapping one by name takes effect', () => {
    const g = new Generator(2);
    const model = new RetinaNet(3, g).eval();
    const gm = symbolicTrace(model).eval();
    expect(gm.getSubmodule('anchors')).toBe(model.anchors);
    class ShiftedAnchors extends Anchors {
      override forward(feats: Tensor[]): Tensor {
        return super.forward(feats).add(100);
      }
    }
    const shifted = new ShiftedAnchors();
    gm.setSubmodule('anchors', shifted);
    const img = randn([1, 1, 8, 8], { generator: g });
    const out = gm.call({ img }) as RetinaData;
    const ref = model.call({ img }) as RetinaData;
    expect(shifted.calls).toBe(1);
    const boxes = (d: RetinaData) => (d.predBboxes as { boxes: number[][] }).boxes[0]!;
    boxes(out).forEach((v, i) => {
      expect(v).toBeCloseTo(boxes(ref)[i]! + 100, 4);
    });
  });

  it('a deep copy of the GraphModule has its own graph and modules', () => {
    const g = new Generator(3);
    const gm = symbolicTrace(new RetinaNet(3, g)).eval();
    const copy = deepCopy(gm);
    // (identity checks as booleans: toBe on two graphs makes vitest deep-compare them)
    expect(copy.graph === gm.graph).toBe(false);
    expect(copy.printTabular()).toBe(gm.printTabular());
    expect(copy.getSubmodule('anchors') === gm.getSubmodule('anchors')).toBe(false);
    const img = randn([1, 1, 8, 8], { generator: g });
    expect((copy.call({ img }) as RetinaData).predBboxes).toEqual((gm.call({ img }) as RetinaData).predBboxes);
    expect((copy.getSubmodule('anchors') as Anchors).calls).toBe(1);
    copy.graph.eraseNode(copy.graph.node('output')!);
    expect(gm.graph.node('output')).toBeDefined();
  });
});

describe('fxWrap: functions and fxWrapMethod', () => {
  // Give the name explicitly: bundlers may rename functions (esbuild calls this one clipIfLarge2).
  const clipIfLarge = fxWrap(function clipIfLarge(x: Tensor, limit: number): Tensor {
    return x.abs().max().item() > limit ? x.mul(limit / x.abs().max().item()) : x;
  }, 'clipIfLarge');

  class WithHelpers extends Module {
    readonly relu = new ReLU();
    forward(x: Tensor): Tensor {
      return this.scaleByMode(clipIfLarge(this.relu.call(x), 2));
    }
    scaleByMode(x: Tensor): Tensor {
      return this.training ? x.mul(2) : x.mul(-1);
    }
  }
  fxWrapMethod(WithHelpers, 'scaleByMode');

  it('records a wrapped function and a wrapped method as single nodes that run for real', () => {
    const m = new WithHelpers();
    const gm = symbolicTrace(m);
    expect(gm.graph.nodes.map((n) => `${n.op}:${n.target}${n.method ? `.${n.method}` : ''}`)).toEqual([
      'placeholder:x',
      'call_module:relu',
      'call_function:clipIfLarge',
      'call_module:.scaleByMode',
      'output:output',
    ]);
    const small = tensor([-1, 0.5, 1]);
    const large = tensor([-1, 4, 1]);
    expect(Array.from(gm.call(small).values())).toEqual([0, 1, 2]);
    expect(Array.from(gm.call(large).values())).toEqual([0, 4, 1]);
    gm.eval();
    expect(Array.from(gm.call(large).values())).toEqual([-0, -2, -0.5]);
  });

  it('wrapped names are unique; unnamed functions need a name', () => {
    expect(() => fxWrap((x: Tensor) => x, 'clipIfLarge')).toThrow(
      /already registered as 'clipIfLarge'; pick another name/,
    );
    expect(fxWrap(clipIfLarge, 'clipIfLarge')).toBe(clipIfLarge);
    expect(() => fxWrap(function (this: unknown) {})).toThrow(/has no name/);
    expect(() => fxWrapMethod(WithHelpers, 'forward')).toThrow(/other than forward/);
  });
});
