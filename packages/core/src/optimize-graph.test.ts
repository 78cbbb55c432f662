// prepareQatFx's optimizeGraph (horizon_plugin_pytorch's optimize_graph): on bernoulli2 a cat's inputs share its
// scale from prepare on, so calibration and QAT see the scales the converted cat has.
import { defaultQatQconfig, type FakeQuantize, setFakeQuantize } from '@qtk/fake-quant';
import type { GraphModule } from '@qtk/ir';
import { bernoulli2UnifyCat } from '@qtk/march-bernoulli2';
import '@qtk/march-bayes';
import { DeQuantStub, Module, QuantStub } from '@qtk/nn';
import { TIED_FAKE_QUANT_METHOD } from '@qtk/spec';
import { add, cat, Generator, mul, randn, type Tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { calibrate, convertFx, modelFromBytes, modelToBytes, prepareQatFx } from './index.js';
import { catAndProducers, catInputRequants } from './testing/convert-harness.js';

/** A cat of an add, a mul and a stub's output. */
class CatNet extends Module {
  readonly qa = new QuantStub();
  readonly qb = new QuantStub();
  readonly dequant = new DeQuantStub();
  forward(x: Tensor, y: Tensor): Tensor {
    const a = this.qa.call(x);
    const b = this.qb.call(y);
    return this.dequant.call(cat([add(a, b), mul(a, b), a], 1));
  }
}

const g = new Generator(11);
const batches = Array.from({ length: 3 }, () => [
  randn([2, 4, 3], { generator: g }),
  randn([2, 4, 3], { generator: g }).mul(5),
]);
const quiet = () => {};
const tiedNodes = (gm: GraphModule) => gm.graph.nodes.filter((n) => n.method === TIED_FAKE_QUANT_METHOD);
const catFakeQuant = (gm: GraphModule) => gm.getSubmodule(tiedNodes(gm)[0]!.target) as unknown as FakeQuantize;

function prepared(options: { optimizeGraph?: boolean; march?: typeof bernoulli2UnifyCat | string }): GraphModule {
  const gm = prepareQatFx(
    new CatNet().eval(),
    { global: defaultQatQconfig },
    { march: 'bernoulli2', onWarning: quiet, ...options },
  );
  calibrate(gm, batches, { onWarning: quiet });
  return gm;
}

describe('optimizeGraph: cat inputs tied to the cat scale at prepare', () => {
  it("ties the add's and the mul's fake-quants to the cat's (the stub keeps its own), removing theirs", () => {
    const plain = prepared({});
    const tied = prepared({ optimizeGraph: true });
    expect(tiedNodes(plain)).toHaveLength(0);
    expect(tiedNodes(tied).map((n) => (n.args[0] as { name: string }).name)).toEqual([
      '_generated_add_0',
      '_generated_mul_0',
    ]);
    const fakeQuants = (gm: GraphModule) =>
      gm.namedModules().filter(([, m]) => m.constructor.name === 'FakeQuantize').length;
    expect(fakeQuants(plain) - fakeQuants(tied)).toBe(2);
    // calibration observed the cat's output alone: the same scale as without the tie
    const catOf = (gm: GraphModule) => Array.from(catFakeQuant(gm).calculateQparams().scale);
    const plainCat = plain.graph.nodes.find(
      (n) => (n.args[0] as { name?: string } | undefined)?.name === '_generated_cat_0',
    )!;
    expect(catOf(tied)).toEqual(
      Array.from((plain.getSubmodule(plainCat.target) as unknown as FakeQuantize).calculateQparams().scale),
    );
  });

  it('QAT sees the shared scale: in VALIDATION the fake-quantized model equals the fixed-point one on the cat', () => {
    const tied = prepared({ optimizeGraph: true });
    setFakeQuantize(tied, 'VALIDATION');
    const fixed = convertFx(tied, { onWarning: quiet }); // plain bernoulli2, the recorded march
    const { cat: c, add: a, mul: m } = catAndProducers(fixed);
    expect(a.config.outScale).toBe(c.config.outScale);
    expect(m.config.outScale).toBe(c.config.outScale);
    expect(catInputRequants(c).slice(0, 2)).toEqual([
      [1, 0, 0],
      [1, 0, 0],
    ]);
    // the same model through bernoulli2UnifyCat's prepare gives the same converted scales
    const viaMarch = convertFx(prepared({ march: bernoulli2UnifyCat }), { onWarning: quiet });
    expect(catAndProducers(viaMarch).cat.config).toEqual(c.config);
  });

  it('keeps the tie through a model file, and warns on a march without graph optimizations', () => {
    const tied = prepared({ optimizeGraph: true });
    const loaded = modelFromBytes(modelToBytes(tied)).model;
    expect(tiedNodes(loaded)).toHaveLength(2);
    const [x, y] = batches[0]!;
    setFakeQuantize(tied, 'VALIDATION');
    setFakeQuantize(loaded, 'VALIDATION');
    expect(Array.from((loaded.call(x!, y!) as Tensor).values())).toEqual(
      Array.from((tied.call(x!, y!) as Tensor).values()),
    );
    const warnings: string[] = [];
    prepareQatFx(
      new CatNet().eval(),
      { global: defaultQatQconfig },
      { march: 'bayes', optimizeGraph: true, onWarning: (w) => warnings.push(w) },
    );
    expect(warnings).toContain(
      "prepareQatFx: march 'bayes' has no graph optimizations, so optimizeGraph changes nothing",
    );
  });
});
