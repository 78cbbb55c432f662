// QDQ exports of calibrated models run in onnxruntime-node against QTK's fake-quant model: the bounds
// below are the measured agreement (docs/onnx-export.md, "How close ONNX Runtime comes"), with margin.
import '../index.js'; // the QDQ and integer export rules
import '@qtk/march-bayes';
import '@qtk/march-bernoulli2';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getDefaultRounding, setDefaultRounding } from '@qtk/fake-quant';
import type { Module } from '@qtk/nn';
import { afterAll, describe, expect, it } from 'vitest';
import { exportOnnxBytes } from '@qtk/onnx';
import { findPythonWithOnnx, onnxCheck } from '@qtk/onnx/testing';
import { itWithOnnxChecker } from '../../../../scripts/onnx-checker.js';
import { compareWithOrt, type OrtOptimization, type RuntimeComparison } from '../testing/qdq-compare.js';
import { ShortcutResNet } from '@qtk/test-models';
import { calibratedModel, randomBatches, smallConvNet, warmUp } from '../testing/qdq-models.js';
import type { ObserverDType } from '@qtk/spec';

const dir = mkdtempSync(join(tmpdir(), 'qtk-qdq-ort-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const python = findPythonWithOnnx();
/** The newest ai.onnx opset the installed python onnx knows (its checker rejects later ones). */
const checkerOpset = python
  ? Number(
      spawnSync(python, ['-c', 'import onnx.defs; print(onnx.defs.onnx_opset_version())'], { encoding: 'utf8' }).stdout,
    )
  : 0;

interface Bounds {
  /** Largest difference of the (fake-quantized) output, in its steps. */
  outputSteps: number;
  /** Share of output elements that differ at all. */
  outputShare: number;
  /** Largest difference of any fake-quantized value inside the model, in its steps. */
  innerSteps: number;
  /** Share of all fake-quantized elements inside the model that differ. */
  innerShare: number;
}

interface Case {
  name: string;
  model: () => Module;
  shape: number[];
  march: string;
  dtype: ObserverDType;
  bounds: Record<OrtOptimization, Bounds>;
}

// Measured on the residual net, 4 × 256 inputs (docs/onnx-export.md): int8, optimizations off: output ≤ 1 step on
// ≤ 0.3% of elements, inside ≤ 3 steps on ≤ 0.01%; on: output ≤ 1 step on ≤ 9.7%, inside ≤ 4 steps on ≤ 0.9%.
// int16 activations: output ≤ 1 step on ≤ 9.8% (off) / 18.8% (on); inside ≤ 6 int16 steps, up to 88 when an
// input lies exactly halfway between two steps of the 1/128 input grid (QTK rounds it up, QuantizeLinear to even).
const INT8: Record<OrtOptimization, Bounds> = {
  disabled: { outputSteps: 1, outputShare: 0.02, innerSteps: 4, innerShare: 5e-4 },
  all: { outputSteps: 1, outputShare: 0.2, innerSteps: 4, innerShare: 0.02 },
};
const INT16: Record<OrtOptimization, Bounds> = {
  disabled: { outputSteps: 1, outputShare: 0.2, innerSteps: 128, innerShare: 0.03 },
  all: { outputSteps: 1, outputShare: 0.3, innerSteps: 128, innerShare: 0.3 },
};

const residual = () => new ShortcutResNet(2);
const CASES: Case[] = [
  {
    name: 'small conv net, bayes int8',
    model: () => smallConvNet(1),
    shape: [4, 3, 8, 8],
    march: 'bayes',
    dtype: 'qint8',
    bounds: INT8,
  },
  {
    name: 'residual net, bayes int8',
    model: residual,
    shape: [8, 1, 28, 28],
    march: 'bayes',
    dtype: 'qint8',
    bounds: INT8,
  },
  {
    name: 'residual net, bernoulli2 int8',
    model: residual,
    shape: [8, 1, 28, 28],
    march: 'bernoulli2',
    dtype: 'qint8',
    bounds: INT8,
  },
  {
    name: 'residual net, bayes int16 activations (opset 21)',
    model: residual,
    shape: [8, 1, 28, 28],
    march: 'bayes',
    dtype: 'qint16',
    bounds: INT16,
  },
];

function summary(c: RuntimeComparison, output: string) {
  const inner = c.values.filter((v) => v.node !== output);
  const size = inner.reduce((a, v) => a + v.size, 0);
  const out = c.values.find((v) => v.node === output)!;
  return {
    outputSteps: out.maxSteps,
    outputShare: out.differing / out.size,
    innerSteps: Math.max(...inner.map((v) => v.maxSteps)),
    innerShare: inner.reduce((a, v) => a + v.differing, 0) / size,
  };
}

describe.each(CASES)('$name: exported QDQ in onnxruntime-node vs QTK', (c) => {
  const model = c.model();
  warmUp(model, c.shape, 3);
  const gm = calibratedModel(model, randomBatches(c.shape, 4, 4), { march: c.march, dtype: c.dtype });
  const x = randomBatches([128, ...c.shape.slice(1)], 1, 9)[0]!;
  const opset = c.dtype === 'qint16' ? 21 : 13;
  const bytes = exportOnnxBytes(gm, x, { opset });

  // python3-onnx from Debian bookworm (1.12) knows opsets to 17; ONNX Runtime checks the opset 21 model when it loads it
  itWithOnnxChecker('passes onnx.checker', (python, ctx) => {
    if (checkerOpset < opset)
      ctx.skip(`the installed onnx knows opsets up to ${checkerOpset}; its checker cannot check opset ${opset}`);
    const path = join(dir, `${c.name.replace(/[^a-z0-9]+/gi, '-')}.onnx`);
    writeFileSync(path, bytes);
    expect(onnxCheck(python, path)).toBeNull();
  });

  it.each(['disabled', 'all'] as const)(
    'agrees within the measured bounds (ORT graph optimization %s)',
    async (level) => {
      const s = summary(await compareWithOrt(gm, bytes, x, level), 'fc');
      const b = c.bounds[level];
      expect(s.outputSteps).toBeLessThanOrEqual(b.outputSteps);
      expect(s.outputShare).toBeLessThanOrEqual(b.outputShare);
      expect(s.innerSteps).toBeLessThanOrEqual(b.innerSteps);
      expect(s.innerShare).toBeLessThanOrEqual(b.innerShare);
    },
  );
});

describe('where the differences come from', () => {
  it('with round-half-to-even (ONNX QuantizeLinear rounding) the input quantization agrees exactly; what remains starts at a conv', async () => {
    const previous = getDefaultRounding();
    setDefaultRounding('half_even');
    try {
      const model = new ShortcutResNet(2);
      warmUp(model, [8, 1, 28, 28], 3);
      const gm = calibratedModel(model, randomBatches([8, 1, 28, 28], 4, 4), { march: 'bayes', dtype: 'qint16' });
      const x = randomBatches([128, 1, 28, 28], 1, 9)[0]!;
      const c = await compareWithOrt(gm, exportOnnxBytes(gm, x, { opset: 21 }), x, 'disabled');
      expect(c.values[0]).toMatchObject({ node: 'quant', differing: 0 });
      // each fake-quant where a difference first appears is off by at most one step
      expect(c.values[1]!.maxSteps).toBeLessThanOrEqual(1);
      expect(Math.max(...c.values.map((v) => v.maxSteps))).toBeLessThanOrEqual(8);
    } finally {
      setDefaultRounding(previous);
    }
  });
});
