// docs/qat-guide.md's first code block (calibrate, save, load, QAT, convert) runs as written, on a
// small model and random data, so the guide cannot drift from the API.
import { join } from 'node:path';
import { namedFakeQuants } from '@qtk/fake-quant';
import type { Module } from '@qtk/nn';
import { noGrad, type Tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { blockSuite, firstTsBlock, maxAbsAndDiff, readRepoFile } from './testing/doc-blocks.js';

const guide = readRepoFile('docs/qat-guide.md');

const flowBlock = () => firstTsBlock(guide, 'docs/qat-guide.md');

/** What the block expects to exist: a float model with a `classifier`, batches, a step count. */
const PRELUDE = `
import { AdaptiveAvgPool2d, BatchNorm2d, Conv2d, DeQuantStub, Flatten, Linear, Module, QuantStub, ReLU } from '@qtk/nn';
import { Generator, randint, randn, type Tensor } from '@qtk/tensor';
class Net extends Module {
  readonly quant = new QuantStub({ scale: 1 / 128 });
  readonly conv = new Conv2d(1, 6, 3, { padding: 1, generator: new Generator(1) });
  readonly bn = new BatchNorm2d(6);
  readonly relu = new ReLU();
  readonly pool = new AdaptiveAvgPool2d(1);
  readonly flatten = new Flatten();
  readonly classifier = new Linear(6, 4, { generator: new Generator(2) });
  readonly dequant = new DeQuantStub();
  forward(x: Tensor): Tensor {
    return this.dequant.call(this.classifier.call(this.flatten.call(this.pool.call(this.relu.call(this.bn.call(this.conv.call(this.quant.call(x))))))));
  }
}
const g = new Generator(3);
const floatModel = new Net().eval();
const calibrationBatches = Array.from({ length: 3 }, () => randn([8, 1, 8, 8], { generator: g }).clamp(-1, 1));
const trainBatches: [Tensor, Tensor][] = Array.from({ length: 4 }, () => [randn([8, 1, 8, 8], { generator: g }).clamp(-1, 1), randint(0, 4, [8], { generator: g })]);
const totalSteps = trainBatches.length;
`;

const { dir, importBlock } = blockSuite('.qat-guide-');

describe('docs/qat-guide.md', () => {
  it('the calibrate -> save -> load -> QAT -> convert flow runs; with averagingConstant 0 QAT keeps the calibrated activation scales', async () => {
    const statePath = join(dir, 'calib.qtk-state');
    const block = flowBlock().replaceAll("'calib.qtk-state'", JSON.stringify(statePath));
    expect(block).toContain(JSON.stringify(statePath)); // the block still saves and loads a state file
    const flow = await importBlock<{ calib: Module; qat: Module; fixed: Module; calibrationBatches: Tensor[] }>(
      'flow.ts',
      `${PRELUDE}\n${block}\nexport { calib, qat, fixed, calibrationBatches };\n`,
    );
    const scales = (m: Module) =>
      new Map(
        namedFakeQuants(m)
          .filter(([n]) => !n.includes('weight'))
          .map(([n, fq]) => [n, Array.from(fq.calculateQparams().scale)]),
      );
    const before = scales(flow.calib);
    expect(before.size).toBeGreaterThan(1);
    expect(scales(flow.qat)).toEqual(before);
    const x = flow.calibrationBatches[0]!;
    const a = (noGrad(() => (flow.qat as unknown as { call(x: Tensor): Tensor }).call(x)) as Tensor).values();
    const b = ((flow.fixed as unknown as { call(x: Tensor): Tensor }).call(x) as Tensor).values();
    const { maxAbs, maxDiff } = maxAbsAndDiff(a, b);
    expect(maxDiff).toBeLessThan(0.05 * maxAbs);
  });
});
