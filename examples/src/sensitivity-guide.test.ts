// docs/sensitivity.md's code block (sensitivity table, autoQconfig from it, prepare with the result)
// runs as written on a small model whose second conv has a too-small fixed activation scale, so the
// guide cannot drift from the API.
import type { QatModule } from '@qtk/core';
import type { GraphModule } from '@qtk/ir';
import type { AutoQconfigResult, SensitivityResult } from '@qtk/profiler';
import { describe, expect, it, vi } from 'vitest';
import { blockSuite, firstTsBlock, readRepoFile } from './testing/doc-blocks.js';

const guide = readRepoFile('docs/sensitivity.md');

/** What the block expects: a float model, calibration and labelled eval batches, an all-int8 qconfig dict. */
const PRELUDE = `
import { getDefaultQconfig, qconfig, withArgs } from '@qtk/fake-quant';
import { AdaptiveAvgPool2d, Conv2d, DeQuantStub, Flatten, Linear, Module, QuantStub, ReLU } from '@qtk/nn';
import { argmax, Generator, rand, type Tensor } from '@qtk/tensor';
class Net extends Module {
  readonly quant = new QuantStub();
  readonly conv1 = new Conv2d(3, 8, 3, { padding: 1, generator: new Generator(1) });
  readonly relu1 = new ReLU();
  readonly conv2 = new Conv2d(8, 8, 3, { padding: 1, generator: new Generator(2) });
  readonly relu2 = new ReLU();
  readonly pool = new AdaptiveAvgPool2d(1);
  readonly flatten = new Flatten();
  readonly fc = new Linear(8, 4, { generator: new Generator(3) });
  readonly dequant = new DeQuantStub();
  forward(x: Tensor): Tensor {
    const y = this.relu2.call(this.conv2.call(this.relu1.call(this.conv1.call(this.quant.call(x)))));
    return this.dequant.call(this.fc.call(this.flatten.call(this.pool.call(y))));
  }
}
const floatModel = new Net().eval();
const batch = (seed: number) => rand([16, 3, 8, 8], { generator: new Generator(seed) }).mul(2).sub(1);
const calibrationBatches = [batch(4), batch(5)];
const evalBatches = [batch(6), batch(7)];
const evalLabels = evalBatches.map((x) => argmax(floatModel.call(x), 1).values() as Int32Array);
const minMax = getDefaultQconfig('fake_quant', 'fake_quant', 'min_max', 'min_max');
// conv2 + relu2 fuse at relu2; its output gets a fixed scale far below what calibration picks
const qconfigDict = {
  global: minMax,
  moduleName: { relu2: qconfig(withArgs({ observer: 'fixed_scale', scale: 0.001, dtype: 'qint8' }), minMax.weight) },
};
`;

const { importBlock } = blockSuite('.sensitivity-guide-');

describe('docs/sensitivity.md', () => {
  it('the block runs: the broken layer tops the table, autoQconfig raises it to int16, and prepare takes the result', async () => {
    const block = firstTsBlock(guide, 'docs/sensitivity.md', '## Usage');
    const log = vi.spyOn(console, 'log').mockImplementation(() => {});
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    const flow = await importBlock<{ table: SensitivityResult; auto: AutoQconfigResult; qat: GraphModule }>(
      'flow.ts',
      `${PRELUDE}\n${block}\nexport { table, auto, qat };\n`,
    );
    expect(log.mock.calls[0]?.[0]).toBe('relu2'); // the block prints the most sensitive node first
    log.mockRestore();
    warn.mockRestore();
    expect(flow.table.stage).toBe('fixed');
    expect(flow.table.metric).toBe('cosine');
    expect(flow.table.nodes[0]!.name).toBe('relu2');
    expect(flow.auto.chosen[0]!.name).toBe('relu2');
    expect(flow.auto.chosen.length).toBeLessThanOrEqual(2);
    expect(flow.auto.scores.measured!).toBeGreaterThan(flow.auto.scores.int8!);
    expect((flow.qat.getSubmodule('relu2') as QatModule).activationPostProcess!.dtype).toBe('qint16');
  });
});
