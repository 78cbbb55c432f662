import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { serializeNpy } from '@qtk/nn';
import { Generator, rand } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { run, tempDir } from './testing/fixtures.js';

// A ConvNeXt block exported by PyTorch (zoo/slice): on bernoulli2 with --hybrid its LayerNorm stays on the CPU,
// and ONNX has LayerNormalization only from opset 17.
const CONVNEXT = join(__dirname, '../../../zoo/slice/convnext-op13.onnx');

describe('qtk export picks the opset the model needs', () => {
  const dir = tempDir();
  const shape = [4, 8, 8, 8];
  writeFileSync(
    join(dir, 'x.npy'),
    serializeNpy(shape, rand(shape, { low: -1, high: 1, generator: new Generator(3) }).values() as Float32Array),
  );
  const model = join(dir, 'b.qtk');

  it('without --opset: 17 for a CPU LayerNorm, and says why; with --opset 13: refused, nothing written', async () => {
    const q = await run('quantize', CONVNEXT, '--calib', dir, '--march', 'bernoulli2', '--hybrid', '--out', model);
    expect(q.code).toBe(0);
    expect(q.stdout).toMatch(/CPU norm.*LayerNormalization/);
    const auto = await run('export', model, '--out', join(dir, 'auto.onnx'));
    expect(auto.stderr).toBe('');
    expect(auto.stdout).toMatch(/opset 17 \(LayerNorm 'norm' needs opset 17/);
    const c = await run('compare', model, join(dir, 'auto.onnx'), '--data', dir);
    expect(c.stdout).toMatch(/100\.00% bit-identical/);
    const pinned = await run('export', model, '--out', join(dir, 'pinned.onnx'), '--opset', '13');
    expect(pinned.code).toBe(1);
    expect(pinned.stderr).toMatch(/needs opset 17.*nothing written/);
  }, 60_000);
});
