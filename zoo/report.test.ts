// The zoo's report: totals against the goals and the reason for every miss, from hand-made results.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../apps/cli/src/testing/fixtures.js';
import type { ZooEntry } from './entries.js';
import { writeReport } from './report.js';
import { type ModelResult, reasonOf, warningsOf } from './result.js';

const entry = (name: string, fx: ZooEntry['fx']): ZooEntry => ({
  name,
  family: 'test',
  source: 'hand-made',
  corpus: 'pytorch',
  onnx: `/cache/${name}.onnx`,
  opsets: [{ opset: 17, file: `/cache/${name}.onnx` }],
  data: '/cache/data',
  batch: 4,
  fx,
});

const good: ModelResult = {
  name: 'good',
  imports: [{ opset: 17, ok: true, maxRelError: 1e-7 }],
  marches: [
    { march: 'bayes', mode: 'plain', converted: true, bpuShare: 1, sqnrDb: 30, bitExact: true },
    { march: 'bayes', mode: 'hybrid', converted: true, bpuShare: 1, sqnrDb: 30, bitExact: true },
    { march: 'bernoulli2', mode: 'plain', converted: false, reason: "march 'bernoulli2' cannot convert 1 node(s)" },
    {
      march: 'bernoulli2',
      mode: 'hybrid',
      converted: true,
      bpuShare: 0.75,
      sqnrDb: 28.5,
      bitExact: false,
      exportReason: 'qtk compare: differs',
      warnings: ['partition: 3 CPU segments'],
    },
  ],
  finished: true,
};
const bad: ModelResult = {
  name: 'bad',
  imports: [{ opset: 17, ok: false, reason: 'Erf is not supported' }],
  marches: [],
  finished: false,
  stopped: 'timed out after 300 s (in bayes plain)',
};

describe('the zoo report', () => {
  it('counts each goal (SQNR against FX − 1 dB on the models FX quantizes) and lists every miss with its reason', () => {
    const dir = tempDir();
    writeReport(
      dir,
      [
        { entry: entry('good', { sqnrDb: [29.2] }), result: good },
        { entry: entry('bad', { reason: 'FX cannot trace it' }), result: bad },
      ],
      { commit: 'abc1234', fresh: 2, selection: '--quick', seconds: 60, timeout: 300, memory: 8192 },
    );
    const md = readFileSync(join(dir, 'model-zoo.md'), 'utf8');
    for (const line of [
      '| models | 2 |',
      '| import (QTK float = onnxruntime within 1e-3 of the output range, at some opset) | 1 / 2 |',
      '| convert plain on bayes | 1 / 2 |',
      '| convert plain on bernoulli2 | 0 / 2 |',
      '| convert hybrid on bernoulli2 | 1 / 2 |',
      // FX 29.2 dB: the goal is 28.2 dB, met by bayes (30) and bernoulli2 (28.5)
      '| bayes hybrid SQNR ≥ FX − 1 dB (of the models FX quantizes) | 1 / 1 |',
      '| bernoulli2 hybrid SQNR ≥ FX − 1 dB (of the models FX quantizes) | 1 / 1 |',
      '| bayes hybrid export bit-exact in onnxruntime-node | 1 / 2 |',
      '| bernoulli2 hybrid export bit-exact in onnxruntime-node | 0 / 2 |',
      "  - bernoulli2 plain: march 'bernoulli2' cannot convert 1 node(s)",
      '  - bernoulli2 hybrid export: qtk compare: differs',
      '  - bernoulli2 hybrid warned: partition: 3 CPU segments',
      '  - stopped: timed out after 300 s (in bayes plain)',
      '  - import (opset 17): Erf is not supported',
      '| good | test | 1/1, 1.0e-7 | ✓ 100% BPU, 30.0 dB | ✓ 100% BPU, 30.0 dB | ✗ | ✓ 75% BPU, 28.5 dB | 29.2 dB | ✓ / ✗ | not recorded |',
    ])
      expect(md).toContain(line);
    const json = JSON.parse(readFileSync(join(dir, 'model-zoo.json'), 'utf8'));
    expect(json.models[0].entry).toEqual({
      name: 'good',
      family: 'test',
      source: 'hand-made',
      corpus: 'pytorch',
      batch: 4,
      fx: { sqnrDb: [29.2] },
      opsets: [17],
    });
  });

  it('takes a qtk error with its list of nodes as one reason, without the pointer to --help', () => {
    const stderr =
      "[1/2] calibrating\nqtk: error: cannot quantize m.onnx: march 'x' cannot convert 2 node(s):\n  - a: onnx.pad\n  - b: erf\nrun 'qtk quantize --help' for the options\n";
    expect(reasonOf(stderr)).toBe("cannot quantize m.onnx: march 'x' cannot convert 2 node(s): - a: onnx.pad - b: erf");
  });

  it("takes qtk quantize's warnings from its summary, each on one line", () => {
    const stdout = [
      'agreement:    max |fixed-point - fake-quant| = 0.0219',
      'warnings:     2',
      "  - calibration: fake-quant 'stub' clamped 54.9 % of the values it saw",
      '    the calibration samples do not fit --input-scale 1/128: pass --input-scale auto',
      '  - partition: 53 segments',
      'written:      m.qtk (11835139 bytes, fixed-point)',
    ].join('\n');
    expect(warningsOf(stdout)).toEqual([
      "calibration: fake-quant 'stub' clamped 54.9 % of the values it saw the calibration samples do not fit --input-scale 1/128: pass --input-scale auto",
      'partition: 53 segments',
    ]);
    expect(warningsOf('warnings:     0\nwritten:      m.qtk\n')).toEqual([]);
  });
});
