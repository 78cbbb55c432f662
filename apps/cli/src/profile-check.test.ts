// qtk profile and qtk check through the command line: the report folder, the summary, the linter's table,
// JSON and exit codes.
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  activationFakeQuantOf,
  calibrate,
  checkSensitivityTable,
  defaultQconfigSetter,
  prepareQatFx,
  sensitivitySetter,
} from '@qtk/core';
import { saveModelFileSync } from '@qtk/core/node';
import { getDefaultQatQconfig } from '@qtk/fake-quant';
import { importOnnx } from '@qtk/onnx';
import { Generator, rand } from '@qtk/tensor';
import { beforeAll, describe, expect, it } from 'vitest';
import { BadForBernoulli2, run, runProcess, tempDir, TinyNet, writeCalibBatch, writeOnnx } from './testing/fixtures.js';

let dir: string;
let tiny: string;
let bad: string;
let calib: string;

beforeAll(() => {
  dir = tempDir();
  tiny = writeOnnx(join(dir, 'tiny.onnx'), new TinyNet(new Generator(3)));
  bad = writeOnnx(join(dir, 'bad.onnx'), new BadForBernoulli2(new Generator(4)));
  calib = writeCalibBatch(dir, [48, 1, 28, 28], new Generator(5));
});

describe('qtk profile', () => {
  it('writes profiler.html and one JSON per tool, and prints the summary with the first-divergence verdicts', () => {
    const out = join(dir, 'report');
    const r = runProcess('profile', tiny, '--calib', calib, '--march', 'bayes', '--out', out, '--samples', '8');
    expect(r.stderr).toContain('[9/9] firstDivergence');
    // stderr is a pipe here: one line per step, no carriage-return redraws
    expect(r.stderr).not.toContain('\r');
    expect(r.stderr).toMatch(/^\[1\/9\] \w+\n\[2\/9\] \w+\n/m);
    expect(r.stderr).toMatch(/^\[9\/9\] firstDivergence\n$/m);
    expect(r.stdout).toMatch(
      /^import: {6}\S+tiny\.onnx\ncalibration: 48 samples .*\nconversion: {2}to fixed point for bayes\n/m,
    );
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^engine: calibration in onnxruntime-node \d+\.\d+\.\d+$/m);
    expect(r.stdout).toMatch(/float → fake quant: (no node diverges|first diverges at)/);
    expect(r.stdout).toContain('fixed point → onnxruntime: no node diverges');
    expect(r.stdout).toContain(`written: ${join(out, 'profiler.html')} and 9 JSON files`);
    const sim = JSON.parse(readFileSync(join(out, 'featuremapSimilarity.json'), 'utf8'));
    expect(sim.nodes.map((n: { name: string }) => n.name)).toEqual(expect.arrayContaining(['relu', 'pool', 'fc']));
    expect(readFileSync(join(out, 'profiler.html'), 'utf8')).toContain('qtk-report-data');
  });

  it('with labelled --data: each stage’s accuracy, the float one from the ONNX file in onnxruntime-node', async () => {
    const labelled = join(dir, 'labelled');
    mkdirSync(labelled);
    copyFileSync(join(calib, 'batch.npy'), join(labelled, 'batch.npy'));
    writeFileSync(join(labelled, 'labels.txt'), `${Array.from({ length: 48 }, (_, i) => i % 3).join('\n')}\n`);
    const floatAccuracy: string[] = [];
    for (const engine of ['auto', 'qtk']) {
      const out = join(dir, `report-${engine}`);
      const r = await run(
        'profile',
        tiny,
        '--calib',
        calib,
        '--data',
        labelled,
        '--march',
        'bayes',
        '--out',
        out,
        '--samples',
        '4',
        '--engine',
        engine,
      );
      expect(r.code).toBe(0);
      const line =
        /^accuracy on 48 samples \(.*\): float (\d+\.\d\d) %, calibrated \d+\.\d\d %, fixed point \d+\.\d\d %$/m.exec(
          r.stdout,
        );
      expect(line).not.toBeNull();
      floatAccuracy.push(line![1]!);
      expect(r.stdout).toMatch(
        engine === 'qtk' ? /^engine: float accuracy in qtk$/m : /^engine: float accuracy in onnxruntime-node \d/m,
      );
    }
    expect(floatAccuracy[0]).toBe(floatAccuracy[1]);
  });

  it('a QAT model file: compared with its own conversion (QvsQ) on the given samples, no calibration', () => {
    const g = new Generator(8);
    const qat = prepareQatFx(
      new TinyNet(g),
      { global: getDefaultQatQconfig() },
      { march: 'bayes', inputQuantStubs: { scale: 1 / 128 }, onWarning: () => {} },
    );
    calibrate(qat, [rand([16, 1, 28, 28], { low: -1, high: 1, generator: g })]);
    const qatPath = join(dir, 'tiny-qat.qtk');
    saveModelFileSync(qat, qatPath, { meta: { inputShape: [null, 1, 28, 28] } });
    const out = join(dir, 'qat-report');
    const r = runProcess('profile', qatPath, '--calib', calib, '--out', out, '--samples', '8');
    expect(r.stderr).not.toContain('qtk: error');
    expect(r.code).toBe(0);
    expect(r.stdout).not.toContain('float → fake quant');
    expect(r.stdout).toContain('fake quant → fixed point: no node diverges');
    expect(r.stdout).toContain('fixed point → onnxruntime: no node diverges');
    expect(r.stdout).toContain(`written: ${join(out, 'profiler.html')} and 7 JSON files`);
    const sim = JSON.parse(readFileSync(join(out, 'featuremapSimilarity.json'), 'utf8'));
    expect(sim.nodes.find((n: { name: string }) => n.name === 'fc').type).toBe('FixedConv');
  });

  it('refuses a report folder that is a file and a missing --out (usage errors)', async () => {
    const file = join(dir, 'a-file');
    writeFileSync(file, 'keep me');
    const r = await run('profile', tiny, '--calib', calib, '--out', file);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("--out: '");
    expect(readFileSync(file, 'utf8')).toBe('keep me');
    const missing = await run('profile', tiny, '--calib', calib);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('missing --out DIR');
  });
});

describe('qtk check', () => {
  it('a model bernoulli2 cannot run: an error per unsupported op with its fix, exit code 1', () => {
    const r = runProcess('check', bad, '--march', 'bernoulli2');
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/error\s+unsupported-op\s+lrelu/);
    expect(r.stdout).toContain('hybridDict {"moduleName":["lrelu"]}');
    expect(r.stdout).toMatch(/\d+ error\(s\)/);
  });

  it('--hybrid turns them into notes (exit 0), and --json prints checkModel’s result', async () => {
    const r = await run('check', bad, '--march', 'bernoulli2', '--hybrid', '--json');
    expect(r.code).toBe(0);
    const result = JSON.parse(r.stdout);
    expect(result.version).toBe(1);
    expect(result.march).toBe('bernoulli2');
    expect(result.counts.error).toBe(0);
    const lrelu = result.findings.find((f: { node: string }) => f.node === 'lrelu');
    expect(lrelu.severity).toBe('info');
  });

  it('a model bayes runs whole: no errors, and no output-precision advice (qtk quantize makes fc int32 itself)', async () => {
    const r = await run('check', tiny, '--march', 'bayes', '--json');
    expect(r.code).toBe(0);
    const codes = JSON.parse(r.stdout).findings.map((f: { code: string }) => f.code);
    expect(codes).not.toContain('unsupported-op');
    expect(codes).not.toContain('missing-quant-stub');
    expect(codes).not.toContain('output-not-high-precision');
    expect(existsSync(tiny)).toBe(true);
  });
});

describe('qtk sensitivity', () => {
  it('writes the sensitivity table prepareQatFx’s sensitivitySetter reads, with autoQconfig’s choice', async () => {
    const out = join(dir, 'sensitivity.json');
    const r = await run('sensitivity', tiny, '--calib', calib, '--march', 'bayes', '--budget', '1', '--out', out);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/cosine: float 1\.000, all int8 0\.99\d+/);
    expect(r.stdout).toContain('autoQconfig (int16, budget 1)');
    const json = JSON.parse(readFileSync(out, 'utf8'));
    const table = checkSensitivityTable(json);
    const values = table.nodes.map((n) => n.sensitivity ?? -Infinity);
    expect(values).toEqual([...values].sort((a, b) => b - a));
    expect(json.autoQconfig.chosen.length).toBeLessThanOrEqual(1);
    // the table drives prepare: the most sensitive node gets int16 activations, the rest stay int8
    const gm = importOnnx(readFileSync(tiny));
    const prepared = prepareQatFx(gm, {
      march: 'bayes',
      inputQuantStubs: { scale: 1 / 128 },
      outputDeQuantStubs: false, // as qtk quantize and qtk sensitivity prepare
      qconfigSetter: [defaultQconfigSetter(), sensitivitySetter(table, { topK: 1 })],
      onWarning: () => {},
    });
    const dtypes = table.nodes.map((n) => activationFakeQuantOf(prepared, n.name)?.dtype ?? null);
    expect(table.nodes.length).toBeGreaterThan(2);
    expect(dtypes[0]).toBe('qint16');
    expect(dtypes.slice(1)).not.toContain('qint16');
  });

  it('refuses an unknown metric (usage error)', async () => {
    const r = await run('sensitivity', tiny, '--calib', calib, '--metric', 'psnr');
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--metric must be one of');
  });
});
