// A model whose shapes are fixed for its declared batch (the ONNX test data's PixelShuffle reshapes to
// [1, 1, 3, 3, 4, 4]) fails to calibrate at another batch: qtk says which --batch to pass; its export traces at
// batch 1.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Generator, rand } from '@qtk/tensor';
import { expect, it } from 'vitest';
import { describeNeeding } from '../../../scripts/needs-system.js';
import { ONNX_NODE_TESTS as ONNX_TESTDATA } from '../../../scripts/system-requirements.js';
import { npyBytes, run, runQuantize, tempDir } from './testing/fixtures.js';

const PIXEL_SHUFFLE = join(ONNX_TESTDATA, '..', 'pytorch-converted', 'test_PixelShuffle', 'model.onnx');

describeNeeding('onnx-testdata', "the ONNX test data's test_PixelShuffle (input '0' [1, 9, 4, 4])", () => {
  it('calibrating at batch 4 fails with the batch to pass; at --batch 1 it quantizes', async () => {
    const dir = tempDir();
    const calib = join(dir, 'calib');
    mkdirSync(calib);
    const x = rand([8, 9, 4, 4], { low: -1, high: 1, generator: new Generator(2) });
    writeFileSync(join(calib, 'x.npy'), npyBytes([8, 9, 4, 4], x.values() as Float32Array));
    const out = join(dir, 'ps.qtk');
    const r = await runQuantize(PIXEL_SHUFFLE, calib, out, { batch: '4' });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('qtk: error: calibration failed at batch 4: reshape: a tensor of 576 elements');
    expect(r.stderr).toContain(
      "the model declares a batch of 1 (input '0'), and may compute its shapes for it: pass --batch 1",
    );
    const ok = await runQuantize(PIXEL_SHUFFLE, calib, out, { batch: '1' });
    expect(ok.stderr).toBe('');
    expect(ok.code).toBe(0);
    // the export traces at batch 1 when the model cannot run its batch-2 example; the file agrees bit for bit
    const onnx = join(dir, 'ps.onnx');
    const x2 = await run('export', out, '--out', onnx);
    expect(x2.stderr).toBe('');
    expect(x2.code).toBe(0);
    const c = await run('compare', out, onnx, '--data', calib, '--batch', '1');
    expect(c.stdout).toContain('outputs:   100.00% bit-identical (8 / 8 samples)');
    expect(c.code).toBe(0);
  });
});
