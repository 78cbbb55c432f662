import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadModelFileSync } from '@qtk/core/node';
import { accuracyOf, loadDataset, predict, SUBSET_DIR } from '@qtk/examples';
import { agreement } from '@qtk/nn';
import { importOnnx } from '@qtk/onnx';
import { DemoArgsError, parseDemoArgs, type DemoOptions } from './args.js';
import { ARTIFACTS, writeArtifacts } from './artifacts.js';
import { runDemo, type DemoResult } from './pipeline.js';
import { formatSummary } from './summary.js';
import { checkDeployment, type DeploymentCheck, FIXED_POINT_ONNX } from './deployment.js';
import { EMBEDDED_WEIGHTS, loadFloatWeights } from './weights.js';

describe('parseDemoArgs', () => {
  it('has the documented defaults and rejects bad flags with clear messages', () => {
    const o = parseDemoArgs([]) as DemoOptions;
    expect(o).toMatchObject({
      observer: 'mse',
      march: 'bayes',
      qatSteps: 150,
      qatLr: 1e-4,
      out: 'runs/demo',
      data: null,
      trainFloat: false,
    });
    expect(parseDemoArgs(['--help'])).toBe('help');
    expect(parseDemoArgs(['--march', 'bernoulli2', '--observer', 'mse', '--qat-steps', '0'])).toMatchObject({
      march: 'bernoulli2',
      observer: 'mse',
      qatSteps: 0,
    });
    expect(() => parseDemoArgs(['--march', 'x86'])).toThrow(/--march must be one of bayes, bernoulli2, got 'x86'/);
    expect(() => parseDemoArgs(['--observer', 'max'])).toThrow(
      /--observer must be one of min_max, percentile, mse, kl, mix/,
    );
    expect(() => parseDemoArgs(['--qat-lr', '0'])).toThrow(/--qat-lr expects a positive number/);
    expect(() => parseDemoArgs(['--qat-steps', '1.5'])).toThrow(/--qat-steps expects an integer >= 0, got '1.5'/);
    expect(() => parseDemoArgs(['--bogus'])).toThrow(DemoArgsError);
    expect(parseDemoArgs(['--', '--qat-steps', '7'])).toMatchObject({ qatSteps: 7 });
    expect(() => parseDemoArgs(['extra'])).toThrow(/unexpected argument 'extra'/);
    expect(() => parseDemoArgs(['--weights', 'w.qtk', '--train-float'])).toThrow(/exclude each other/);
  });
});

describe('the demo pipeline on a tiny slice', () => {
  let out: string;
  let result: DemoResult;
  let written: string[];
  let deployment: DeploymentCheck;

  beforeAll(async () => {
    out = mkdtempSync(join(tmpdir(), 'qtk-demo-'));
    const options = {
      ...(parseDemoArgs([
        '--qat-steps',
        '5',
        '--calib-images',
        '256',
        '--train-limit',
        '256',
        '--test-limit',
        '200',
        '--no-progress',
        '--out',
        out,
      ]) as DemoOptions),
    };
    result = runDemo(options);
    deployment = await checkDeployment(result, join(out, 'new-folder'), false); // a folder that does not exist yet
    written = writeArtifacts(result, out, deployment);
  }, 120_000);
  afterAll(() => rmSync(out, { recursive: true, force: true }));

  it('reports sane accuracies and fake-quant vs fixed-point agreement', () => {
    const { accuracy: a } = result;
    for (const v of [a.float, a.calibration, a.qat!, a.fixedPoint, result.agreement]) {
      expect(v).toBeGreaterThanOrEqual(0);
      expect(v).toBeLessThanOrEqual(1);
    }
    expect(result.testImages).toBe(200);
    // the embedded weights score 92.50 % on these 200 images (92.55 % on the 2,000 of the subset, 92.40 % on the full test set)
    expect(a.float).toBeGreaterThan(0.88);
    expect(a.calibration).toBeGreaterThan(0.85);
    expect(a.fixedPoint).toBeGreaterThan(0.85);
    expect(result.agreement).toBeGreaterThanOrEqual(0.9);
    const table = formatSummary(result);
    for (const row of ['float', 'calibration', 'QAT', 'fixed point', 'agreement'])
      expect(table).toMatch(new RegExp(`^${row} `, 'm'));
  });

  it('the integer ONNX file gives the outputs of QTK bit for bit in onnxruntime-node, and the table says so', () => {
    expect(deployment.identicalOutputs).toBe(1);
    expect(deployment.intermediates.identical).toBe(true);
    expect(deployment.accuracy.onnxruntime).toBe(result.accuracy.fixedPoint);
    expect(formatSummary(result, deployment)).toMatch(
      /^integer ONNX +\d+\.\d\d % .*100\.00 % of outputs bit-identical to QTK$/m,
    );
    const summary = JSON.parse(readFileSync(join(out, ARTIFACTS.summaryJson), 'utf8'));
    expect(summary.integerOnnx.identicalOutputs).toBe(1);
  });

  it('writes the artifacts, and they load back', () => {
    for (const name of Object.values(ARTIFACTS)) expect(existsSync(join(out, name)), name).toBe(true);
    expect(written.length).toBe(Object.values(ARTIFACTS).length + 1);
    expect(written).toContain(join(out, 'new-folder', FIXED_POINT_ONNX));
    const summary = JSON.parse(readFileSync(join(out, ARTIFACTS.summaryJson), 'utf8'));
    expect(summary.accuracy.fixedPoint).toBe(result.accuracy.fixedPoint);
    const report = JSON.parse(readFileSync(join(out, ARTIFACTS.qconfigJson), 'utf8'));
    const fc = report.qat.find((r: { module: string }) => r.module === 'fc');
    expect(fc.activation).toBeNull(); // the "out" qconfig keeps the logits in high precision
    expect(fc.weight).toMatchObject({ observer: 'min_max', dtype: 'qint8', granularity: 'per-channel (axis 0)' });
    expect(
      report.calibration.some((r: { activation: { observer: string } | null }) => r.activation?.observer === 'mse'),
    ).toBe(true);
    expect(readFileSync(join(out, ARTIFACTS.qconfigText), 'utf8')).toMatch(/QAT model/);
    // QAT trained a copy: the float model, and the float ONNX written after QAT, keep the embedded weights
    const embedded = loadFloatWeights(EMBEDDED_WEIGHTS);
    for (const [name, t] of Object.entries(embedded.stateDict().tensors))
      expect([name, Array.from(result.float.stateDict().tensors[name]!.values())]).toEqual([
        name,
        Array.from(t.values()),
      ]);
    const test = loadDataset(SUBSET_DIR, 'test', 200);
    const onnx = importOnnx(readFileSync(join(out, ARTIFACTS.floatOnnx)));
    expect(accuracyOf(predict(onnx, test), test)).toBeCloseTo(result.accuracy.float, 5);
    const qat = loadModelFileSync(join(out, ARTIFACTS.qatCheckpoint));
    expect(qat.kind).toBe('qat');
    expect(accuracyOf(predict(qat.model, test), test)).toBeCloseTo(result.accuracy.qat!, 5);
    const fixed = loadModelFileSync(join(out, ARTIFACTS.fixedPoint));
    expect(fixed).toMatchObject({ kind: 'fixed-point', march: 'bayes' });
    const fixedPred = predict(fixed.model, test);
    expect(accuracyOf(fixedPred, test)).toBeCloseTo(result.accuracy.fixedPoint, 5);
    expect(agreement(fixedPred, predict(result.fixedPoint, test))).toBe(1);
  });
});
