// --input-shape drives the ONNX import (issue 28 §1): a model with free dims imports at the shape
// given, and an import that fails at the default says which input and dims, in the CLI's terms.
import '@qtk/march-bayes';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadModelFileSync } from '@qtk/core/node';
import { Generator, rand } from '@qtk/tensor';
import { beforeAll, describe, expect, it } from 'vitest';
import { npyBytes, run, runProcess, tempDir } from './testing/fixtures.js';
import { freeHeightWidthModel, tokensModel, twoInputModel } from './testing/free-dim-models.js';

let dir: string;
let pool: string;
let tokens: string;
let two: string;

function npyDir(name: string, shape: number[], count: number): string {
  const d = join(dir, name);
  mkdirSync(d);
  const g = new Generator(5);
  for (let i = 0; i < count; i++) {
    const x = rand(shape, { low: -1, high: 1, generator: g });
    writeFileSync(join(d, `s${i}.npy`), npyBytes(shape, x.values() as Float32Array));
  }
  return d;
}

beforeAll(() => {
  dir = tempDir();
  pool = join(dir, 'pool.onnx');
  tokens = join(dir, 'tokens.onnx');
  two = join(dir, 'two.onnx');
  writeFileSync(pool, freeHeightWidthModel());
  writeFileSync(tokens, tokensModel());
  writeFileSync(two, twoInputModel());
});

describe('qtk and free input dims, as a user runs it (issue 28 §1)', () => {
  it('quantize imports at --input-shape: a pooling model with free H and W converts', () => {
    const calib = npyDir('calib7', [3, 7, 7], 3);
    const out = join(dir, 'pool.qtk');
    const r = runProcess('quantize', pool, '--calib', calib, '--input-shape', '1,3,7,7', '--out', out);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('calibration: 3 samples of shape [3, 7, 7]');
    expect(r.stdout).toMatch(/nodes: +5 converted to fixed point/);
    expect(loadModelFileSync(out).meta.inputShape).toEqual([null, 3, 7, 7]);
  });

  it('without --input-shape the import error names the input, its free dims, the shape used and --input-shape', () => {
    const r = runProcess('inspect', pool);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('maxPool2d: input [1, 4, 1, 1] is smaller than the kernel');
    expect(r.stderr).toContain(
      "  input 'input': free dim 0 (N), dim 2 (H) and dim 3 (W) set to 1, so it was imported at [1, 3, 1, 1]\n" +
        'if the failure comes from that size, give the real shape: --input-shape 1,3,H,W',
    );
    expect(r.stderr).not.toContain('inputShapes');
  });
});

describe('--input-shape in every command that imports', () => {
  it('a rank-3 [N, T, D] input quantizes from .npy samples of [T, D], named or not', async () => {
    const calib = npyDir('calibT', [8, 4], 3);
    for (const shape of ['1,8,4', 'input=1,8,4']) {
      const r = await run('quantize', tokens, '--calib', calib, '--input-shape', shape, '--out', join(dir, 't.qtk'));
      expect(r.stderr).toBe('');
      expect(r.stdout).toContain('calibration: 3 samples of shape [8, 4]');
      expect(r.code).toBe(0);
    }
    const bad = await run('check', tokens, '--march', 'bayes');
    expect(bad.stderr).toContain(
      "input 'input': free dim 0 (N) and dim 1 (T) set to 1, so it was imported at [1, 1, 4]",
    );
    expect(bad.stderr).toContain('--input-shape 1,T,4');
  });

  it('inspect, check and sensitivity import at the shape given', async () => {
    const calib = npyDir('calibS', [3, 7, 7], 2);
    const inspect = await run('inspect', pool, '--input-shape', '1,3,7,7', '--march', 'bayes');
    expect(inspect.stdout).toContain('5 of 5 nodes supported');
    const check = await run('check', pool, '--input-shape', '1,3,7,7', '--march', 'bayes');
    expect(check.stderr).not.toContain('free dim');
    const sens = await run('sensitivity', pool, '--calib', calib, '--input-shape', '1,3,7,7', '--batch', '2');
    expect(sens.stderr).not.toContain('error');
    expect(sens.code).toBe(0);
    for (const argv of [
      ['check', pool, '--march', 'bayes'],
      ['sensitivity', pool, '--calib', calib],
      ['eval', pool, '--data', calib, '--engine', 'qtk'], // onnxruntime (the default) takes the free dims as they are
      ['export', pool, '--out', join(dir, 'x.onnx')],
    ]) {
      const r = await run(...argv);
      expect(r.stderr).toContain('--input-shape 1,3,H,W');
    }
  });

  // qtk inspect MODEL --input-shape SHAPE refused: the exit code and what the message says
  it.each([
    [
      'a shape that contradicts a fixed dim names the input and the dim',
      'pool',
      '1,4,7,7',
      1,
      "wrong input shape: --input-shape [1, 4, 7, 7] does not match the model's input [?, 3, ?, ?] ('?' = any size): dim 1 of input 'input' is fixed at 3",
    ],
    ['a shape of the wrong rank says so', 'pool', '1,3,7', 1, 'it has 4 dims, not 3'],
    [
      'a misspelt input name gets a did-you-mean',
      'pool',
      'inptu=1,3,7,7',
      2,
      "--input-shape names 'inptu', which is not an input of the model; did you mean 'input'? (its inputs: input)",
    ],
    [
      'a bare shape for two inputs asks for NAME=SHAPE',
      'two',
      '1,1,4,4',
      2,
      "--input-shape 1,1,4,4 names no input, but the model has 2 (a, b); give each its shape: --input-shape 'a=...;b=...'",
    ],
    ['an entry without a name is not NAME=SHAPE', 'two', 'a=1,1,4,4;=1', 2, "--input-shape: '=1' is not NAME=SHAPE"],
  ] as const)('%s', async (_, model, shape, code, message) => {
    const r = await run('inspect', model === 'pool' ? pool : two, '--input-shape', shape);
    expect(r.code).toBe(code);
    expect(r.stderr).toContain(message);
  });
});
