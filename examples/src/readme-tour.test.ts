import { QTensor } from '@qtk/fixed-point';
import { noGrad, type Tensor } from '@qtk/tensor';
import { describe, expect, it, vi } from 'vitest';
import { blockSuite, firstTsBlock, maxAbsAndDiff, readRepoFile } from './testing/doc-blocks.js';

const readme = readRepoFile('README.md');

const tourBlock = () => firstTsBlock(readme, 'README.md', '## API tour');
const onnxBlock = () => firstTsBlock(readme, 'README.md', '## Your own ONNX model');
const { importBlock } = blockSuite('.readme-tour-');

describe('the README API tour', () => {
  it('runs, and its fixed-point model agrees with the fake-quant model it came from', async () => {
    const log = vi.spyOn(console, 'log').mockImplementation(() => {});
    const tour = await importBlock<{
      qat: { call(x: Tensor): unknown };
      fixed: { call(x: Tensor): unknown };
      batches: Tensor[];
      logits: Tensor;
    }>('tour.ts', `${tourBlock()}\nexport { qat, fixed, batches, logits };\n`);
    const printed = log.mock.calls.map((c) => String(c[0]));
    log.mockRestore();
    // it printed the traced graph and the converted graph
    expect(printed).toHaveLength(2);
    expect(printed[0]).toMatch(/call_module +conv /);
    expect(printed[1]).toMatch(/call_module +quant/);
    expect(tour.logits.shape).toEqual([16, 10]);
    expect(tour.logits.dtype).toBe('float32');
    // the integer model against its fake-quant twin, batch by batch: logits close, same top-1 almost everywhere
    let same = 0;
    let total = 0;
    for (const x of tour.batches) {
      const a = (noGrad(() => tour.qat.call(x)) as Tensor).values();
      const b = (tour.fixed.call(x) as Tensor).values();
      const { maxAbs, maxDiff } = maxAbsAndDiff(a, b);
      expect(maxDiff).toBeLessThan(0.05 * maxAbs);
      for (let r = 0; r < a.length / 10; r++) {
        let ia = 0;
        let ib = 0;
        for (let c = 1; c < 10; c++) {
          if (a[r * 10 + c]! > a[r * 10 + ia]!) ia = c;
          if (b[r * 10 + c]! > b[r * 10 + ib]!) ib = c;
        }
        same += ia === ib ? 1 : 0;
        total++;
      }
    }
    expect(same / total).toBeGreaterThanOrEqual(0.9);
  });
});

describe("the README's own-ONNX-model block", () => {
  it('imports, prepares with input QuantStubs, calibrates and converts; the outputs are float, as the float model', async () => {
    const log = vi.spyOn(console, 'log').mockImplementation(() => {});
    type Model = { call(x: Tensor): unknown };
    const flow = await importBlock<{ float: Model; qat: Model; fixed: Model; batches: Tensor[]; probs: Tensor }>(
      'onnx-flow.ts',
      `${onnxBlock()}\nexport { float, qat, fixed, batches, probs };\n`,
    );
    const printed = log.mock.calls.map((c) => c.map(String).join(' '));
    log.mockRestore();
    expect(printed).toHaveLength(2);
    expect(printed[0]).toMatch(/^fixed point: (\d,){7}\d$/);
    expect(printed[1]).toMatch(/^float: {7}(\d,){7}\d$/);
    expect(flow.probs).not.toBeInstanceOf(QTensor);
    expect(flow.probs.dtype).toBe('float32');
    expect(flow.probs.shape).toEqual([8, 5]);
    // the integer model against its fake-quant twin: probabilities close on every batch
    for (const x of flow.batches) {
      const a = (noGrad(() => flow.qat.call(x)) as Tensor).values();
      const b = (flow.fixed.call(x) as Tensor).values();
      const { maxDiff } = maxAbsAndDiff(a, b);
      expect(maxDiff).toBeLessThan(0.02);
    }
  });
});
