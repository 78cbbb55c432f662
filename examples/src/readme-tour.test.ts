import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { resetMarch } from '@qtk/core';
import { noGrad, type Tensor } from '@qtk/tensor';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { blockDir, firstTsBlock, maxAbsAndDiff } from './testing/doc-blocks.js';

const here = dirname(fileURLToPath(import.meta.url));
const readme = readFileSync(join(here, '..', '..', 'README.md'), 'utf8');

const tourBlock = () => firstTsBlock(readme, 'README.md', '## API tour');
const { dir, remove } = blockDir(here, '.readme-tour-');
afterAll(() => {
  remove();
  resetMarch();
});

describe('the README API tour', () => {
  it('runs, and its fixed-point model agrees with the fake-quant model it came from', async () => {
    const file = join(dir, 'tour.ts');
    writeFileSync(file, `${tourBlock()}\nexport { qat, fixed, batches, logits };\n`);
    const log = vi.spyOn(console, 'log').mockImplementation(() => {});
    const tour = (await import(file)) as {
      qat: { call(x: Tensor): unknown };
      fixed: { call(x: Tensor): unknown };
      batches: Tensor[];
      logits: Tensor;
    };
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
