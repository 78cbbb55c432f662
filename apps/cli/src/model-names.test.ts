// Names a PyTorch user recognises (issue 28 §5): tables show the PyTorch module path the ONNX node name
// encodes beside QTK's name, and name options take QTK's names, ONNX node names or PyTorch module paths.
import '@qtk/march-bayes';
import '@qtk/march-bernoulli2';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadModelFileSync } from '@qtk/core/node';
import { checkDeployDevice } from '@qtk/hybrid';
import { Generator } from '@qtk/tensor';
import { beforeAll, describe, expect, it } from 'vitest';
import { randomNpy, run, runQuantize, tempDir } from './testing/fixtures.js';
import { pytorchNamedModel } from './testing/pytorch-named-model.js';

let dir: string;
let model: string;
let calib: string;

beforeAll(() => {
  dir = tempDir();
  model = join(dir, 'named.onnx');
  writeFileSync(model, pytorchNamedModel());
  calib = join(dir, 'calib');
  mkdirSync(calib);
  const g = new Generator(2);
  for (let i = 0; i < 3; i++) writeFileSync(join(calib, `s${i}.npy`), randomNpy([3, 8, 8], g));
});

const quantize = (options: Record<string, string | true> = {}) =>
  runQuantize(model, calib, join(dir, 'out.qtk'), options);

describe('tables show the PyTorch module path beside QTK names (issue 28 §5)', () => {
  it('qtk inspect --march: a source name column in the graph and the support table', async () => {
    const r = await run('inspect', model, '--march', 'bayes');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^opcode +name +source name +target/m);
    expect(r.stdout).toMatch(/^call_module +features_features_1_conv +features\.1\.conv +features_features_1_conv /m);
    expect(r.stdout).toMatch(/^node +source name +op +in table/m);
    expect(r.stdout).toMatch(/^features_features_0_features_0_0 +features\.0\.0 +Conv /m);
    expect(r.stdout).toMatch(/^features_features_1_act +features\.1\.act +Relu /m);
    expect(r.stdout).toMatch(/^classifier_classifier_1 +classifier\.1 +Gemm /m);
  });

  it('qtk inspect --hybrid: a fused conv + relu shows its conv, not its relu', async () => {
    const r = await run('inspect', model, '--march', 'bernoulli2', '--hybrid');
    expect(r.stdout).toMatch(/^name +source name +device +type/m);
    expect(r.stdout).toMatch(/^features_features_1_act +features\.1\.conv +BPU /m);
    expect(r.stdout).toMatch(/^avgpool +avgpool +CPU /m);
  });

  it('qtk sensitivity and qtk check add the column too', async () => {
    const s = await run('sensitivity', model, '--calib', calib, '--batch', '3');
    expect(s.code).toBe(0);
    expect(s.stdout).toMatch(/^node +source name +type +sensitivity/m);
    expect(s.stdout).toMatch(/^features_features_1_act +features\.1\.conv +/m);
    const c = await run('check', model, '--march', 'bayes');
    expect(c.stdout).toMatch(/^severity +code +node +source name +message/m);
    expect(c.stdout).toMatch(/ classifier_classifier_1 +classifier\.1 +/);
  });
});

describe('name options take QTK names, ONNX node names and PyTorch module paths (issue 28 §5)', () => {
  it('--cpu-nodes takes a PyTorch module path prefix, --keep-float an ONNX node name', async () => {
    const r = await quantize({
      march: 'bernoulli2',
      hybrid: true,
      'cpu-nodes': 'features.1',
      'keep-float': '/classifier/classifier.1/Gemm',
    });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^devices: +2 BPU, 3 CPU; /m);
    expect(r.stdout).toContain(
      "  CPU features_features_1_act [features.1.conv] (ConvAddReLU2d): hybridDict: moduleName 'features_features_1_conv'",
    );
    expect(r.stdout).toContain(
      "  CPU classifier_classifier_1 [classifier.1] (Linear): qconfig null: qconfig of 'classifier_classifier_1' is null",
    );
    const report = checkDeployDevice(loadModelFileSync(join(dir, 'out.qtk')).model);
    expect(report.nodes.filter((n) => n.device === 'CPU').map((n) => n.name)).toEqual([
      'features_features_1_act',
      'avgpool',
      'classifier_classifier_1',
    ]);
  });

  it('qtk sensitivity --nodes takes PyTorch module paths (the fused conv + relu by its conv)', async () => {
    const r = await run(
      'sensitivity',
      model,
      '--calib',
      calib,
      '--batch',
      '3',
      '--nodes',
      'features.1.conv,classifier',
    );
    expect(r.code).toBe(0);
    const rows = r.stdout.split('\n').filter((l) => /^(features|classifier|avgpool|_generated)/.test(l));
    expect(rows.map((l) => l.split(/ +/).slice(0, 2))).toEqual(
      expect.arrayContaining([
        ['features_features_1_act', 'features.1.conv'],
        ['classifier_classifier_1', 'classifier.1'],
      ]),
    );
    expect(rows).toHaveLength(2);
  });

  it('a miss names the closest PyTorch paths as well as QTK names', async () => {
    const keep = await quantize({ 'keep-float': 'features.9' });
    expect(keep.code).toBe(2);
    expect(keep.stderr).toContain("--keep-float: no module named 'features.9' in the model; its modules are: ");
    expect(keep.stderr).toContain(
      "names of the ONNX file work too: did you mean 'features' or 'features.0' or 'features.1'?",
    );
    const cpu = await quantize({ march: 'bernoulli2', hybrid: true, 'cpu-nodes': 'features.1.convv' });
    expect(cpu.code).toBe(1);
    expect(cpu.stderr).toContain("hybridDict.moduleName entry 'features.1.convv' matches nothing in the model");
    expect(cpu.stderr).toContain("names of the ONNX file work too: did you mean 'features.1.conv'");
  });

  it('--qconfig moduleName entries take a PyTorch module path', async () => {
    const plain = await quantize();
    expect(plain.stdout).toMatch(/^precision: +int32 \(high-precision\) outputs: classifier_classifier_1$/m);
    const file = join(dir, 'qconfig.json');
    writeFileSync(file, JSON.stringify({ moduleName: { 'classifier.1': 'remove' } }));
    const r = await quantize({ qconfig: file });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).not.toContain('high-precision');
  });
});
