// Seeded fuzz of module configs in model files: one config value changed per case, the CRC
// recomputed, then load and one inference. Every failure must be a typed QtkError; no raw
// TypeError/RangeError at load or at the first run.
import '@qtk/march-bayes';
import { defaultQat16bitQconfig, defaultQatOutQconfig, defaultQatQconfig, setFakeQuantize } from '@qtk/fake-quant';
import { type GraphModule, symbolicTrace } from '@qtk/ir';
import { Generator, QtkError, rand, randn, type Tensor } from '@qtk/tensor';
import { afterAll, describe, expect, it } from 'vitest';
import { editModelFileGraph } from './testing/model-file-bytes.js';
import { calibrate, convertFx, modelFromBytes, modelToBytes, prepareQatFx, resetMarch, setMarch } from './index.js';
import { calibratedQat, callModel, setBatchNormStats } from './testing/convert-harness.js';
import { ConvClassifier, LayerNormSoftmax } from '@qtk/test-models';

// QTK_CONFIG_FUZZ=cases[,seed] runs a longer round (bench); the suite runs 300 cases of seed 12.
const [CASES, SEED] = (process.env.QTK_CONFIG_FUZZ ?? '300,12').split(',').map(Number) as [number, number];

/** Uniform numbers in [0, 1) from @qtk/tensor's seeded Generator, for the mutations. */
function rng(seed: number): () => number {
  const g = new Generator(seed);
  return () => g.uniform();
}

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
const REPLACEMENTS: Json[] = [
  null,
  'x',
  -1,
  0,
  1.5,
  1e9,
  -2147483649,
  true,
  [],
  {},
  { $number: 'NaN' },
  { $number: 'Infinity' },
  { $typed: 'Int32Array', values: [] },
  { $typed: '__proto__', values: [1] },
];

/** Every (parent, key) slot in a config, depth first. */
function slots(v: Json, out: [Record<string, Json> | Json[], string | number][] = []): typeof out {
  if (Array.isArray(v)) {
    v.forEach((x, i) => {
      out.push([v, i]);
      slots(x, out);
    });
  } else if (v && typeof v === 'object') {
    for (const [k, x] of Object.entries(v)) {
      out.push([v, k]);
      slots(x, out);
    }
  }
  return out;
}

function mutate(bytes: Uint8Array, r: () => number): Uint8Array {
  return editModelFileGraph<{ modules: { config?: Json }[] }>(bytes, (graph) => {
    const withConfig = graph.modules.filter((m) => m.config !== undefined && slots(m.config).length > 0);
    const entry = withConfig[Math.floor(r() * withConfig.length)]!;
    const all = slots(entry.config!);
    const [parent, key] = all[Math.floor(r() * all.length)]!;
    const p = parent as Record<string | number, Json>;
    const op = r();
    if (op < 0.15 && !Array.isArray(parent)) delete p[key];
    else if (op < 0.3 && Array.isArray(p[key])) (p[key] as Json[]).pop();
    else if (op < 0.4 && Array.isArray(p[key])) (p[key] as Json[]).push(((p[key] as Json[])[0] ?? 1) as Json);
    else if (op < 0.55 && typeof p[key] === 'number') p[key] = -(p[key] as number) - 1;
    else p[key] = REPLACEMENTS[Math.floor(r() * REPLACEMENTS.length)]!;
  });
}

function models(): [string, Uint8Array, Tensor][] {
  const net = new ConvClassifier();
  setBatchNormStats([net.bn], 5);
  net.eval();
  const x = rand([2, 2, 5, 5], { generator: new Generator(3) });
  const qat = calibratedQat(net, { global: defaultQatQconfig, moduleName: { fc: defaultQatOutQconfig } }, [x]);
  setMarch('bayes');
  const comp = prepareQatFx(new LayerNormSoftmax().eval(), { global: defaultQat16bitQconfig }, { march: 'bayes' });
  const y = randn([4, 6], { generator: new Generator(4) });
  calibrate(comp, [y]);
  setFakeQuantize(comp, 'VALIDATION');
  return [
    ['float', modelToBytes(symbolicTrace(new ConvClassifier().eval())), x],
    ['qat', modelToBytes(qat), x],
    ['fixed', modelToBytes(convertFx(qat, { march: 'bayes', onWarning: () => {} }), { march: 'bayes' }), x],
    ['qat-composite', modelToBytes(comp), y],
    ['fixed-composite', modelToBytes(convertFx(comp, { onWarning: () => {} }), { march: 'bayes' }), y],
  ];
}

describe('model file config fuzz', () => {
  afterAll(() => resetMarch());
  it('seeded config mutations (300 in the suite): refused with a typed error at load, or load and run (typed errors only)', () => {
    const counts = { refusedAtLoad: 0, ran: 0, typedAtRun: 0 };
    const generic: string[] = [];
    const r = rng(SEED);
    const bases = models();
    for (let i = 0; i < CASES; i++) {
      const [name, bytes, x] = bases[i % bases.length]!;
      const bad = mutate(bytes, r);
      let model: GraphModule;
      try {
        model = modelFromBytes(bad, `${name}-${i}.qtkm`).model;
      } catch (e) {
        if (e instanceof QtkError) counts.refusedAtLoad++;
        else generic.push(`${name} #${i} at load: ${(e as Error).name}: ${(e as Error).message}`);
        continue;
      }
      try {
        callModel(model, x);
        counts.ran++;
      } catch (e) {
        if (e instanceof QtkError) counts.typedAtRun++;
        else generic.push(`${name} #${i} at run: ${(e as Error).name}: ${(e as Error).message}`);
      }
    }
    if (CASES !== 300)
      console.log('config fuzz', CASES, 'cases, seed', SEED, counts, 'generic', generic.length, generic.slice(0, 5));
    expect(generic).toEqual([]);
  }, 600_000);
});
