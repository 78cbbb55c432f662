// The demo's profiler stage: the fake-quant model that was converted against the fixed-point model, node by
// node, written as runs/demo/profiler/profiler.html (open it in a browser) with one JSON per tool.
import { join } from 'node:path';
import { modelProfiler } from '@qtk/profiler/node';
import type { Tensor } from '@qtk/tensor';
import { takeBatch } from '@qtk/examples';
import type { DemoResult } from './pipeline.js';

export const PROFILER_DIR = 'profiler';
/** Test images the profiler compares the two models on. */
export const PROFILED_IMAGES = 64;

export interface ProfileCheck {
  /** Path of profiler.html. */
  readonly html: string;
  readonly nodes: number;
  /** Nodes whose fixed-point output falls below the cosine threshold against the fake-quant model. */
  readonly flagged: readonly string[];
  /** The largest error a node adds itself (fed the fake-quant model's inputs), in output steps, and where. */
  readonly worstSameInput: { readonly node: string; readonly steps: number } | null;
  readonly seconds: number;
}

export async function profileDemo(r: DemoResult, dir: string): Promise<ProfileCheck> {
  const t0 = performance.now();
  const fakeQuant = r.qat ?? r.calibrated;
  const inputs: Tensor = takeBatch(r.test, null, 0, Math.min(PROFILED_IMAGES, r.test.labels.size)).images;
  const { results, written } = await modelProfiler(fakeQuant, r.fixedPoint, inputs, {
    mode: 'QvsQ',
    outDir: join(dir, PROFILER_DIR),
    float: r.float,
    title: `QTK demo: ${r.qat ? 'QAT' : 'calibrated'} vs fixed point (${r.options.march})`,
  });
  let worst: ProfileCheck['worstSameInput'] = null;
  for (const n of results.featuremapSimilarity.nodes) {
    const steps = n.sameInput?.maxDiffSteps;
    if (steps != null && (worst === null || steps > worst.steps)) worst = { node: n.name, steps };
  }
  return {
    html: written!.html,
    nodes: results.featuremapSimilarity.nodes.length,
    flagged: results.featuremapSimilarity.flagged,
    worstSameInput: worst,
    seconds: (performance.now() - t0) / 1000,
  };
}
