// docs/hybrid-guide.md's code block (hybrid prepare with a hybridDict, calibrate, device table, convert,
// save) runs as written on a small model with a SELU, a `head.conv` and a functional add, so the guide
// cannot drift from the API.
import { join } from 'node:path';
import { loadModelFile } from '@qtk/core/node';
import { checkDeployDevice } from '@qtk/hybrid';
import type { GraphModule } from '@qtk/ir';
import { noGrad, type Tensor } from '@qtk/tensor';
import { describe, expect, it, vi } from 'vitest';
import { blockSuite, firstTsBlock, readRepoFile } from './testing/doc-blocks.js';

const guide = readRepoFile('docs/hybrid-guide.md');

/** What the block expects to exist: a float model (with a SELU, a `head.conv` and an add) and calibration batches. */
const PRELUDE = `
import { Conv2d, DeQuantStub, Module, QuantStub, ReLU, SELU } from '@qtk/nn';
import { Generator, randn, type Tensor } from '@qtk/tensor';
class Head extends Module {
  readonly conv = new Conv2d(4, 4, 1, { generator: new Generator(2) });
  forward(x: Tensor): Tensor {
    return this.conv.call(x);
  }
}
class Net extends Module {
  readonly quant = new QuantStub({ scale: 1 / 128 });
  readonly conv = new Conv2d(1, 4, 3, { padding: 1, generator: new Generator(1) });
  readonly relu = new ReLU();
  readonly selu = new SELU();
  readonly head = new Head();
  readonly dequant = new DeQuantStub();
  forward(x: Tensor): Tensor {
    const y = this.relu.call(this.conv.call(this.quant.call(x)));
    return this.dequant.call(this.head.call(this.selu.call(y).add(y)));
  }
}
const g = new Generator(3);
const floatModel = new Net().eval();
const calibrationBatches = Array.from({ length: 3 }, () => randn([4, 1, 6, 6], { generator: g }).clamp(-1, 1));
`;

const { dir, importBlock } = blockSuite('.hybrid-guide-');

describe('docs/hybrid-guide.md', () => {
  it('the hybrid flow runs: SELU, head.conv and the add on the CPU, the rest on the BPU, and the saved model loads', async () => {
    const modelPath = join(dir, 'model.qtk');
    const block = firstTsBlock(guide, 'docs/hybrid-guide.md').replaceAll("'model.qtk'", JSON.stringify(modelPath));
    expect(block).toContain(JSON.stringify(modelPath)); // the block still saves the model
    const log = vi.spyOn(console, 'log').mockImplementation(() => {});
    const flow = await importBlock<{ qat: GraphModule; fixed: GraphModule; calibrationBatches: Tensor[] }>(
      'flow.ts',
      `${PRELUDE}\n${block}\nexport { qat, fixed, calibrationBatches };\n`,
    );
    expect(String(log.mock.calls[0]?.[0])).toMatch(/CPU/); // the block prints the device table
    log.mockRestore();

    const report = checkDeployDevice(flow.fixed);
    expect(report.nodes.map((n) => [n.name, n.device, n.reason])).toEqual([
      ['relu', 'BPU', 'supported'],
      ['selu', 'CPU', 'hybridDict'],
      ['_generated_add_0', 'CPU', 'hybridDict'],
      ['head.conv', 'CPU', 'hybridDict'],
    ]);
    const loaded = await loadModelFile(modelPath);
    expect(loaded).toMatchObject({ kind: 'fixed-point', march: 'bernoulli2' });
    const x = flow.calibrationBatches[0]!;
    const run = (m: GraphModule) => Array.from((noGrad(() => m.call(x)) as Tensor).values());
    expect(run(loaded.model as GraphModule)).toEqual(run(flow.fixed));
  });
});
