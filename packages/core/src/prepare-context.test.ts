import { fuseFx } from '@qtk/fusion';
import { defaultQat16bitQconfig, defaultQatQconfig } from '@qtk/fake-quant';
import { symbolicTrace } from '@qtk/ir';
import '@qtk/march-bayes';
import { Conv2d, DeQuantStub, Linear, Module, QuantStub, ReLU } from '@qtk/nn';
import { marches } from '@qtk/spec';
import type { Tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { createPrepareContext, qconfigOf } from './index.js';

class Net extends Module {
  readonly quant = new QuantStub();
  readonly conv = new Conv2d(1, 2, 1);
  readonly relu = new ReLU();
  readonly fc = new Linear(2, 3);
  readonly dequant = new DeQuantStub();
  forward(x: Tensor): Tensor {
    return this.dequant.call(this.fc.call(this.relu.call(this.conv.call(this.quant.call(x))).mean([2, 3])));
  }
}

describe('createPrepareContext', () => {
  it("resolves qconfigs from the dict on the fused graph, as prepareQatFx's passes see them", () => {
    const model = new Net();
    const traced = symbolicTrace(model);
    const march = marches.get('bayes');
    const gm = fuseFx(traced, { march });
    const warnings: string[] = [];
    const qconfigDict = { global: defaultQatQconfig, moduleName: { fc: defaultQat16bitQconfig, quant: null } };
    const ctx = createPrepareContext({
      gm,
      input: model,
      source: traced,
      qconfigDict,
      march,
      hybrid: null,
      warn: (m) => warnings.push(m),
    });
    expect([ctx.gm, ctx.input, ctx.source, ctx.march, ctx.hybrid]).toEqual([gm, model, traced, march, null]);
    expect(ctx.quantized.size).toBe(0);
    expect(ctx.owned.size).toBe(0);
    ctx.warn('w');
    expect(warnings).toEqual(['w']);
    const byNode = Object.fromEntries(
      gm.graph.nodes.filter((n) => n.op === 'call_module').map((n) => [n.target, qconfigOf(ctx, n).qconfig]),
    );
    // conv + relu fused at the relu, which keeps the conv's (global) qconfig
    expect(byNode).toEqual({
      quant: null,
      relu: defaultQatQconfig,
      fc: defaultQat16bitQconfig,
      dequant: defaultQatQconfig,
    });
  });

  it("carries hybrid mode's dict and the containers prepare already cloned", () => {
    const owned = new Set<Module>();
    const model = new Net();
    const traced = symbolicTrace(model);
    const march = marches.get('bayes');
    const ctx = createPrepareContext({
      gm: fuseFx(traced, { march }),
      input: model,
      source: traced,
      qconfigDict: { global: defaultQatQconfig },
      march,
      hybrid: { dict: { moduleName: ['fc'] } },
      warn: () => {},
      owned,
    });
    expect(ctx.owned).toBe(owned);
    expect(ctx.hybrid).toEqual({ dict: { moduleName: ['fc'] } });
  });
});
