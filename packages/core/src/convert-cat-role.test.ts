// bernoulli2's optional unifyCatScale finds prepare's activation fake-quants by the role prepare
// records in node meta and the cats by their catalog op, not by generated names.
import { bernoulli2UnifyCat, unifyCatScale } from '@qtk/march-bernoulli2';
import { defaultQatQconfig } from '@qtk/fake-quant';
import type { GraphModule } from '@qtk/ir';
import { DeQuantStub, FloatFunctional, Module, QuantStub } from '@qtk/nn';
import { FAKE_QUANT_ROLE, fakeQuantRoleOf } from '@qtk/spec';
import { add, cat, Generator, mul, randn, type Tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { convertFx } from './index.js';
import { calibratedQat, catAndProducers, catInputRequants } from './testing/convert-harness.js';

/** Two stubs, a cat of add, mul and the first input (functionally or through a FloatFunctional), a DeQuantStub. */
class CatNet extends Module {
  readonly qa = new QuantStub();
  readonly qb = new QuantStub();
  readonly ff = new FloatFunctional();
  readonly dequant = new DeQuantStub();
  constructor(readonly viaModule: boolean) {
    super();
  }
  forward(x: Tensor, y: Tensor): Tensor {
    const a = this.qa.call(x);
    const b = this.qb.call(y);
    const parts = [add(a, b), mul(a, b), a];
    return this.dequant.call(this.viaModule ? this.ff.cat(parts, 1) : cat(parts, 1));
  }
}

function calibrated(viaModule: boolean): GraphModule {
  const g = new Generator(5);
  const batches = Array.from({ length: 3 }, () => [
    randn([2, 4, 3], { generator: g }),
    randn([2, 4, 3], { generator: g }).mul(7),
  ]);
  return calibratedQat(new CatNet(viaModule).eval(), { global: defaultQatQconfig }, batches, {
    prepare: { march: 'bernoulli2', onWarning: () => {} },
  });
}

/** Moves every module the graph calls to a name of no generated pattern (as a renamed or hand-built model has). */
function renameCalledModules(gm: GraphModule): void {
  let k = 0;
  for (const node of gm.graph.nodes) {
    if (node.op !== 'call_module' || !node.target.startsWith('_generated_')) continue;
    const name = `renamed_${k++}`;
    gm.addSubmodule(name, gm.getSubmodule(node.target));
    const old = node.target;
    for (const n of gm.graph.nodes) if (n.op === 'call_module' && n.target === old) n.target = name;
    gm.deleteSubmodule(old);
  }
  gm.recompile();
}

describe('unifyCatScale by fake-quant role and catalog op', () => {
  it('prepare records the activation role on the fake-quants it puts after add, mul and cat', () => {
    const qat = calibrated(false);
    const roles = qat.graph.nodes.filter((n) => fakeQuantRoleOf(n) === 'activation');
    expect(roles.map((n) => (n.args[0] as { name: string }).name)).toEqual([
      '_generated_add_0',
      '_generated_mul_0',
      '_generated_cat_0',
    ]);
    expect(roles.every((n) => n.meta[FAKE_QUANT_ROLE] === 'activation')).toBe(true);
  });

  for (const viaModule of [false, true]) {
    it(`unifies a ${viaModule ? 'FloatFunctional' : 'functional'} cat whose fake-quants have no generated names`, () => {
      const qat = calibrated(viaModule);
      renameCalledModules(qat);
      expect(qat.graph.nodes.filter((n) => n.target.startsWith('_generated_'))).toEqual([]);
      const fixed = convertFx(qat, { march: bernoulli2UnifyCat, onWarning: () => {} });
      const { cat: c, add: addM, mul: mulM } = catAndProducers(fixed);
      expect(addM.config.outScale).toBe(c.config.outScale);
      expect(mulM.config.outScale).toBe(c.config.outScale);
      const [first, second, third] = catInputRequants(c);
      expect([first, second]).toEqual([
        [1, 0, 0],
        [1, 0, 0],
      ]);
      expect(third).not.toEqual([1, 0, 0]); // the QuantStub's own scale, requantized by the cat
    });
  }

  it('counts the unified inputs on a QAT graph (its own modules by default): the add and the mul, not the stub', () => {
    const qat = calibrated(true);
    renameCalledModules(qat);
    expect(unifyCatScale(qat)).toBe(2);
    expect(unifyCatScale(qat)).toBe(0); // already pointing at the cat's fake-quant
  });
});
