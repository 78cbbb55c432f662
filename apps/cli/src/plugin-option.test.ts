import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { QTK_VERSION } from '@qtk/spec';
import { Generator, rand } from '@qtk/tensor';
import { beforeAll, describe, expect, it } from 'vitest';
import { takePluginArgs } from './plugins.js';
import { npyBytes, run, runProcess, runSourceProcess, tempDir, TinyNet, writeOnnx } from './testing/fixtures.js';

let dir: string;
let tiny: string;
beforeAll(() => {
  dir = tempDir();
  tiny = writeOnnx(join(dir, 'tiny.onnx'), new TinyNet(new Generator(0)));
});

describe('qtk --plugin MODULE (real process)', () => {
  it('loads the toy march package, so --march toy checks the model against its table', () => {
    const r = runSourceProcess('inspect', tiny, '--plugin', 'qtk-march-toy', '--march', 'toy');
    expect(r.stderr).not.toContain('error');
    // The toy table has Conv, Gemm and Relu but no pooling: the march was found and its table consulted.
    expect(r.stdout).toContain("support on march 'toy'");
    expect(r.stdout).toMatch(/\nconv\s+Conv\s+yes\s+fused\s+supported\n/);
    expect(r.stdout).toMatch(/\nfc\s+Gemm\s+yes\s+converted\s+supported\n/);
    expect(r.stdout).toMatch(/\npool\s+AveragePool\s+no\s+failed\s+UNSUPPORTED: .*toy capability table/);
    expect(r.stdout).toMatch(/\n\d of 5 nodes supported on 'toy'/);
    expect(r.code).toBe(1);
  });

  it('without --plugin the toy march is unknown (exit 2, naming the registered marches)', () => {
    const r = runProcess('inspect', tiny, '--march', 'toy');
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("unknown march 'toy' (registered: bayes, bernoulli2)");
  });

  it('a module that is not installed is a usage error naming it (exit 2)', () => {
    const r = runProcess('inspect', tiny, '--plugin=qtk-no-such-plugin', '--march', 'bayes');
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('qtk: error: --plugin qtk-no-such-plugin: cannot import the module');
    expect(r.stderr).toContain('is it installed?');
    expect(r.stdout).toBe('');
  });
});

describe('qtk --plugin MODULE (in process)', () => {
  it('quantize calibrates with an observer from a plugin module given by path (qtkPlugin export)', async () => {
    const calib = join(dir, 'calib');
    mkdirSync(calib);
    const g = new Generator(3);
    for (let i = 0; i < 3; i++) {
      const x = rand([2, 1, 28, 28], { low: -1, high: 1, generator: g }).values() as Float32Array;
      writeFileSync(join(calib, `s${i}.npy`), npyBytes([2, 1, 28, 28], x));
    }
    const observer = join(__dirname, '../../../packages/spec/fixtures/third-party-observer/src/index.ts');
    const out = join(dir, 'mean-std.qtk');
    const args = ['quantize', tiny, '--calib', calib, '--out', out, '--observer', 'mean_std'];
    const without = await run(...args);
    expect(without.code).toBe(2);
    expect(without.stderr).toContain("unknown observer 'mean_std'");
    const r = await run(...args, '--plugin', observer);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/observer:\s+mean_std \(activations\)/);
  });

  it('a module that registers nothing is a usage error (exit 2)', async () => {
    const empty = join(dir, 'empty-plugin.mjs');
    writeFileSync(empty, 'export const answer = 42;\n');
    const r = await run('inspect', tiny, '--plugin', empty);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`--plugin ${empty}: the module registered nothing new`);
  });

  it('a qtkPlugin export that breaks the contract is a usage error carrying the contract message', async () => {
    const broken = join(dir, 'broken-plugin.mjs');
    writeFileSync(broken, "export const qtkPlugin = { apiVersion: 2, name: 'future' };\n");
    const r = await run('inspect', tiny, '--plugin', broken);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(
      `--plugin ${broken}: plugin 'future' is written for plugin contract version 2; this QTK (${QTK_VERSION}) implements version 1`,
    );
    const notPlugin = join(dir, 'not-plugin.mjs');
    writeFileSync(notPlugin, "export const qtkPlugin = { name: 'nameless contract' };\n");
    const n = await run('inspect', tiny, '--plugin', notPlugin);
    expect(n.code).toBe(2);
    expect(n.stderr).toContain(`--plugin ${notPlugin}: not a QTK plugin`);
  });

  it('a module that throws while it is imported is reported with its own message, not as missing', async () => {
    const throwing = join(dir, 'throwing-plugin.mjs');
    writeFileSync(throwing, "throw new Error('capability table of acme is broken');\n");
    const r = await run('inspect', tiny, '--plugin', throwing);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`--plugin ${throwing}: importing the module failed: capability table of acme is broken`);
    expect(r.stderr).not.toContain('is it installed?');
  });

  it('--plugin needs a module name', async () => {
    const r = await run('inspect', tiny, '--plugin');
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("option '--plugin' needs a value");
  });

  it('takes every --plugin out of the command line, once each, wherever it stands', () => {
    expect(
      takePluginArgs(['--plugin', 'a', 'inspect', 'm.onnx', '--plugin=b', '--march', 'x', '--plugin', 'a']),
    ).toEqual({ plugins: ['a', 'b'], rest: ['inspect', 'm.onnx', '--march', 'x'] });
    expect(takePluginArgs(['eval', '--', '--plugin', 'a'])).toEqual({
      plugins: [],
      rest: ['eval', '--', '--plugin', 'a'],
    });
  });

  it('command help lists --plugin', async () => {
    const r = await run('inspect', '--help');
    expect(r.stdout).toMatch(/--plugin MODULE\s+load a third-party QTK plugin/);
  });
});
