import { join } from 'node:path';
import { mkdirSync, writeFileSync } from 'node:fs';
import { Generator, rand } from '@qtk/tensor';
import { beforeAll, describe, expect, it } from 'vitest';
import { npyBytes, run, runQuantize, tempDir, TinyNet, writeOnnx } from './testing/fixtures.js';

let dir: string;
let tiny: string;
let calib: string;

beforeAll(() => {
  dir = tempDir();
  tiny = writeOnnx(join(dir, 'tiny.onnx'), new TinyNet(new Generator(3)));
  calib = join(dir, 'calib');
  mkdirSync(calib);
  const g = new Generator(5);
  for (let i = 0; i < 2; i++) {
    const x = rand([2, 1, 28, 28], { low: -1, high: 1, generator: g }).values() as Float32Array;
    writeFileSync(join(calib, `s${i}.npy`), npyBytes([2, 1, 28, 28], x));
  }
});

describe('names: did you mean, and observers in any case', () => {
  it('a mistyped option names the close one', async () => {
    const r = await run('quantize', tiny, '--obsrver', 'mse');
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("unknown option '--obsrver' for 'qtk quantize'; did you mean '--observer'?");
  });

  it('a mistyped march or observer names the close one (a swap of two letters is one edit)', async () => {
    const march = await runQuantize(tiny, calib, join(dir, 'm.qtk'), { march: 'bayse' });
    expect(march.code).toBe(2);
    expect(march.stderr).toContain("unknown march 'bayse' (registered: bayes, bernoulli2); did you mean 'bayes'?");
    const obs = await runQuantize(tiny, calib, join(dir, 'm.qtk'), { observer: 'percentil' });
    expect(obs.code).toBe(2);
    expect(obs.stderr).toMatch(/unknown observer 'percentil' \(registered: [^)]*\); did you mean 'percentile'\?/);
    const inspect = await run('inspect', tiny, '--march', 'bernouli2');
    expect(inspect.stderr).toContain("did you mean 'bernoulli2'?");
    const command = await run('quantise');
    expect(command.stderr).toContain("unknown command 'quantise'; did you mean 'quantize'?");
  });

  it('--observer MSE is the mse observer', async () => {
    const r = await runQuantize(tiny, calib, join(dir, 'mse.qtk'), { observer: 'MSE' });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('observer:     mse (activations)');
  });
});
