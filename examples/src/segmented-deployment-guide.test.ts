// docs/segmented-deployment.md's code block (a model with a second-stage QuantStub, prepare, calibrate,
// convert, split, run, save) runs as written, so the guide cannot drift from the API.
import { join } from 'node:path';
import { loadModelFileSync } from '@qtk/core/node';
import { QTensor } from '@qtk/fixed-point';
import type { GraphModule } from '@qtk/ir';
import { noGrad, type Tensor } from '@qtk/tensor';
import { describe, expect, it, vi } from 'vitest';
import { blockSuite, firstTsBlock, readRepoFile } from './testing/doc-blocks.js';

const guide = readRepoFile('docs/segmented-deployment.md');

/** What the block expects to exist: calibration batches and an input `x`. */
const PRELUDE = `
import { Generator as G, rand as r } from '@qtk/tensor';
const gen = new G(3);
const calibrationBatches = Array.from({ length: 3 }, () => r([4, 1, 8, 8], { generator: gen }).mul(2).sub(1));
const x = r([2, 1, 8, 8], { generator: gen }).mul(2).sub(1);
`;

const { dir, importBlock } = blockSuite('.segmented-guide-');

describe('docs/segmented-deployment.md', () => {
  it('the recipe runs: the stages chain to the fixed-point model bit for bit, and the saved stage loads', async () => {
    const modelPath = join(dir, 'stage2.qtk');
    const block = firstTsBlock(guide, 'docs/segmented-deployment.md').replaceAll(
      "'stage2.qtk'",
      JSON.stringify(modelPath),
    );
    expect(block).toContain(JSON.stringify(modelPath)); // the block still saves the stage
    const log = vi.spyOn(console, 'log').mockImplementation(() => {});
    const flow = await importBlock<{
      fixed: GraphModule;
      stage2: GraphModule;
      handed: unknown[];
      y: Tensor;
      same: Tensor;
      x: Tensor;
    }>('flow.ts', `${PRELUDE}\n${block}\nexport { fixed, stage1, stage2, handed, y, same, x };\n`);
    expect(String(log.mock.calls[0]?.[0])).toMatch(/stage2/); // the block prints the graph
    log.mockRestore();
    const want = Array.from((noGrad(() => flow.fixed.call(flow.x)) as Tensor).values());
    expect(flow.handed).toHaveLength(1);
    expect(flow.handed[0]).toBeInstanceOf(QTensor);
    expect(Array.from(flow.y.values())).toEqual(want);
    expect(Array.from(flow.same.values())).toEqual(want);
    const loaded = loadModelFileSync(modelPath);
    expect(loaded).toMatchObject({ kind: 'fixed-point', march: 'bayes' });
    expect(loaded.model.meta.segment).toEqual({ index: 1, count: 2, inputs: ['relu'], outputs: [] });
    const got = noGrad(() => (loaded.model as GraphModule).call(...flow.handed)) as Tensor;
    expect(Array.from(got.values())).toEqual(want);
  });
});
