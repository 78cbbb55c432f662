// The reference network as a GraphModule: same outputs and gradients as the eager model, bit for bit.
import { deserializeGraphModule, graphModuleToJson, symbolicTrace } from '@qtk/ir';
import { deepCopy } from '@qtk/nn';
import { crossEntropy, Generator, randint, randn, type Tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { ReferenceNet } from './reference-net.js';

const bits = (t: Tensor) => Array.from(t.values());

describe('ReferenceNet traced', () => {
  it('gives exactly the eager outputs and gradients, in training and eval mode', () => {
    const g = new Generator(0);
    const model = new ReferenceNet({ generator: g });
    const eager = deepCopy(model);
    const gm = symbolicTrace(model);
    expect(gm.graph.findNodes({ op: 'call_module' })).toHaveLength(30);
    expect(gm.graph.findNodes({ op: 'call_method', target: 'add' })).toHaveLength(3);

    const x = randn([8, 1, 28, 28], { generator: g });
    const y = randint(0, 10, [8], { generator: g });
    for (let step = 0; step < 2; step++) {
      const lg = crossEntropy(gm.call(x), y);
      const le = crossEntropy(eager.call(x), y);
      expect(bits(lg)).toEqual(bits(le));
      model.zeroGrad();
      eager.zeroGrad();
      lg.backward();
      le.backward();
      const gp = model.namedParameters();
      const ep = eager.namedParameters();
      expect(gp.map(([n]) => n)).toEqual(ep.map(([n]) => n));
      gp.forEach(([, p], i) => {
        expect(bits(p.grad!)).toEqual(bits(ep[i]![1].grad!));
      });
    }
    // BatchNorm running statistics moved the same way through the graph
    expect(bits(model.layer3.bn2.runningVar!)).toEqual(bits(eager.layer3.bn2.runningVar!));

    gm.eval();
    eager.eval();
    expect(bits(gm.call(x))).toEqual(bits(eager.call(x)));
  });

  it('round-trips through JSON and the state dict', () => {
    const g = new Generator(1);
    const gm = symbolicTrace(new ReferenceNet({ generator: g })).eval();
    const back = deserializeGraphModule(graphModuleToJson(gm), { stateDict: gm.stateDict() }).eval();
    const x = randn([4, 1, 28, 28], { generator: g });
    expect(bits(back.call(x))).toEqual(bits(gm.call(x)));
    expect(back.printTabular()).toBe(gm.printTabular());
  });
});
