import '../index.js'; // the QDQ and integer export rules
import type { FixedLayerNorm, FixedSoftmax } from '@qtk/fixed-point';
import { DeQuantStub, LayerNorm, Module, QuantStub, Softmax, Tanh, Upsample } from '@qtk/nn';
import { randn, Generator, type Tensor } from '@qtk/tensor';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { expectOnnxCheckerPasses } from '../../../../scripts/onnx-checker.js';
import { formatRuntimeComparison } from '../compare-runtime.js';
import { compareWithRuntime } from '../node/compare-with-runtime.js';
import { exportOnnxBytes } from '@qtk/onnx';
import { exportAndCompare, fixedPointOf } from '../testing/fixed-models.js';
import { inputQuantize } from '../testing/integer-grid.js';
import { SingleOpNet } from '@qtk/test-models';

function kindsOf(fixed: ReturnType<typeof fixedPointOf>): string[] {
  return fixed.graph.nodes
    .filter((n) => n.op === 'call_module')
    .map((n) => fixed.getSubmodule(n.target).constructor.name);
}

/**
 * Normal inputs (std `std`), then rows pushed past the calibrated range (saturating the input), a row
 * of equal values and one of alternating extremes.
 */
function stressInput(shape: number[], std: number, seed: number, scale: number, qmax: number): Tensor {
  const x = randn(shape, { std, generator: new Generator(seed) });
  const v = x.values() as Float32Array;
  const row = shape[shape.length - 1]!;
  for (let k = 0; k < row; k++) {
    v[k] = (k % 2 === 0 ? 1 : -1) * 4 * qmax * scale; // saturates both ends
    v[row + k] = 0.5 * scale; // a tie on the input grid, every element equal
    v[2 * row + k] = (k - row / 2) * 97.5 * scale; // a spread across the whole grid, with ties
  }
  return x;
}

const g = new Generator(7);
const dir = mkdtempSync(join(tmpdir(), 'qtk-int-composites-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

class Chain extends Module {
  readonly quant = new QuantStub();
  readonly up = new Upsample({ scaleFactor: 2, mode: 'bilinear' });
  readonly act = new Tanh();
  readonly norm = new LayerNorm(32);
  readonly softmax = new Softmax(1);
  readonly dequant = new DeQuantStub();
  forward(x: Tensor): Tensor {
    const y = this.norm.call(this.act.call(this.up.call(this.quant.call(x))));
    return this.dequant.call(this.softmax.call(y));
  }
}

describe('integer export: composites', () => {
  for (const dtype of ['qint8', 'qint16'] as const)
    for (const n of [10, 64]) {
      test(`bayes softmax over ${n}, ${dtype}: every intermediate's operations in ONNX, identical`, async () => {
        const calib = [randn([32, n], { std: 3, generator: g })];
        const fixed = fixedPointOf(new SingleOpNet(new Softmax(-1)), { march: 'bayes', dtype, calibration: calib });
        expect(kindsOf(fixed)).toEqual(['Quantize', 'FixedSoftmax', 'Dequantize']);
        const sm = fixed.getSubmodule('op') as FixedSoftmax;
        expect([sm.config.exp.kind, sm.config.reciprocal.kind]).toEqual(['segment', 'segment']);
        const q = inputQuantize(fixed);
        const x = stressInput([64, n], 3, 11, q.scale, dtype === 'qint8' ? 127 : 32767);
        const { summary } = await exportAndCompare(fixed, x);
        expect(summary).toBe('all 3 compared values identical');
      });
    }

  test('bayes softmax over dim 1 of [N, C, L], qint8', async () => {
    const calib = [randn([8, 12, 5], { std: 2, generator: g })];
    const fixed = fixedPointOf(new SingleOpNet(new Softmax(1)), { march: 'bayes', calibration: calib });
    expect(kindsOf(fixed)).toEqual(['Quantize', 'FixedSoftmax', 'Dequantize']);
    const { summary } = await exportAndCompare(fixed, randn([8, 12, 5], { std: 4, generator: g }));
    expect(summary).toBe('all 3 compared values identical');
  });

  for (const dtype of ['qint8', 'qint16'] as const)
    for (const affine of [true, false])
      test(`bayes layernorm over [4, 16], ${dtype}, ${affine ? 'affine' : 'no affine'}: identical`, async () => {
        const ln = new LayerNorm([4, 16], { elementwiseAffine: affine });
        if (ln.weight) ln.weight.data.set(randn([4, 16], { std: 0.5, mean: 1, generator: g }).values());
        if (ln.bias) ln.bias.data.set(randn([4, 16], { std: 0.3, generator: g }).values());
        const calib = [randn([6, 3, 4, 16], { std: 2, generator: g })];
        const fixed = fixedPointOf(new SingleOpNet(ln), { march: 'bayes', dtype, calibration: calib });
        expect(kindsOf(fixed)).toEqual(['Quantize', 'FixedLayerNorm', 'Dequantize']);
        const fl = fixed.getSubmodule('op') as FixedLayerNorm;
        expect(fl.config.features).toBe(64);
        expect(fl.config.affine !== null).toBe(affine);
        const q = inputQuantize(fixed);
        const x = stressInput([6, 3, 4, 16], 2, 12, q.scale, dtype === 'qint8' ? 127 : 32767);
        const { summary } = await exportAndCompare(fixed, x);
        expect(summary).toBe('all 3 compared values identical');
      });

  for (const dtype of ['qint8', 'qint16'] as const)
    test(`bayes ${dtype}: upsample → tanh → layernorm → softmax chained, identical at every node; onnx.checker passes`, async (ctx) => {
      const calib = [randn([2, 4, 8, 16], { std: 1.5, generator: g })];
      const fixed = fixedPointOf(new Chain(), { march: 'bayes', dtype, calibration: calib });
      expect(kindsOf(fixed)).toEqual([
        'Quantize',
        'FixedResize',
        'FixedTableOp',
        'FixedLayerNorm',
        'FixedSoftmax',
        'Dequantize',
      ]);
      const q = inputQuantize(fixed);
      const x = stressInput([4, 4, 8, 16], 2, 13, q.scale, dtype === 'qint8' ? 127 : 32767);
      const { bytes, summary, comparison } = await exportAndCompare(fixed, x);
      expect(summary).toBe('all 6 compared values identical');
      if (process.env.QTK_MEASURE)
        console.log(
          `MEASURE chain ${dtype}: qtk ${comparison.seconds.qtk.toFixed(4)} s, ort ${comparison.seconds.runtime.toFixed(4)} s, ${bytes.length} bytes`,
        );
      const path = join(dir, `chain-${dtype}.onnx`);
      writeFileSync(path, bytes);
      await expectOnnxCheckerPasses(ctx, path);
    });

  test('bayes qint16 chain exported at batch 2 runs at batch 5 (dynamic batch), identical', async () => {
    const calib = [randn([2, 4, 8, 16], { std: 1.5, generator: g })];
    const fixed = fixedPointOf(new Chain(), { march: 'bayes', dtype: 'qint16', calibration: calib });
    const bytes = exportOnnxBytes(fixed, [randn([2, 4, 8, 16], { generator: g })]);
    const comparison = await compareWithRuntime(fixed, bytes, [randn([5, 4, 8, 16], { std: 2, generator: g })]);
    expect(formatRuntimeComparison(comparison)).toBe('all 6 compared values identical');
    expect(comparison.nodes.at(-1)!.shape).toEqual([5, 4, 16, 32]);
  });
});
