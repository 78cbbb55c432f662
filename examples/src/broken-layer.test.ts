// The profiler's "what must be shown": on MobileHybridNet with one layer given a tiny fixed scale, the report
// and the first-divergence walk name that layer first (seeded random weights, the embedded data subset).
import '@qtk/march-bayes';
import { Generator } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { takeBatch } from './batches.js';
import { BROKEN_NODE, profileBrokenLayer } from './broken-layer.js';
import { loadDataset, SUBSET_DIR } from './data.js';
import { MobileHybridNet } from './mobile-hybrid-net.js';

describe('profiling a broken layer of MobileHybridNet', () => {
  it('the first divergence, the report summary and the similarity flags all point at the broken layer first', async () => {
    const data = loadDataset(SUBSET_DIR, 'train', 256);
    const calibration = [0, 64, 128, 192].map((i) => takeBatch(data, null, i, 64).images);
    const inputs = takeBatch(loadDataset(SUBSET_DIR, 'test', 16), null, 0, 16).images;
    const r = await profileBrokenLayer(new MobileHybridNet({ generator: new Generator(3) }), {
      march: 'bayes',
      calibration,
      inputs,
      outDir: null,
    });
    const d = r.results.firstDivergence!;
    expect(d.first).toEqual({ from: 'float', to: 'fakeQuant', node: BROKEN_NODE });
    expect(d.pairs[0]!.diagnosis!.cause).toBe('saturation');
    expect(r.results.featuremapSimilarity.flagged[0]).toBe(BROKEN_NODE);
    expect(r.report.summary[0]!.text).toContain(`first diverges at ${BROKEN_NODE}`);
    expect(r.report.histograms[0]!.node).toBe(BROKEN_NODE);
    // everything before the broken layer is healthy
    const sim = r.results.featuremapSimilarity.nodes;
    const at = sim.findIndex((n) => n.name === BROKEN_NODE);
    for (const n of sim.slice(0, at)) expect(n.cosine, n.name).toBeGreaterThan(0.99);
    // fake quant → fixed point and fixed point → onnxruntime stay faithful: the break is the scale, not the conversion
    expect(d.pairs[1]!.node).toBeNull();
    expect(d.pairs[2]!.runtime!.mismatches).toBe(0);
  });
});
