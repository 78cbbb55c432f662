import '../index.js'; // the QDQ and integer export rules
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FixedConv } from '@qtk/fixed-point';
import { describe, expect, test } from 'vitest';
import { exportOnnxBytes } from '@qtk/onnx';
import { exportAndCompare, fixedPointOf, uniformInput } from '../testing/fixed-models.js';
import { onnxCheck } from '@qtk/onnx/testing';
import { itWithOnnxChecker } from '../../../../scripts/onnx-checker.js';
import { ResidualNet } from '@qtk/test-models';
import type { ObserverDType } from '@qtk/spec';

function residualFixed(march: string, dtype: ObserverDType) {
  return fixedPointOf(new ResidualNet(), {
    march,
    dtype,
    outModules: ['fc'],
    calibration: [uniformInput([8, 1, 28, 28], 1, 0, 1), uniformInput([8, 1, 28, 28], 2, 0, 1)],
  });
}

describe('integer export: a residual network in the style of the reference network', () => {
  for (const [march, dtype] of [
    ['bayes', 'qint8'],
    ['bayes', 'qint16'],
    ['bernoulli2', 'qint8'],
  ] as const) {
    test(`${march} ${dtype}: every node identical in onnxruntime`, async () => {
      const fixed = residualFixed(march, dtype);
      const kinds = fixed.graph.nodes
        .filter((n) => n.op === 'call_module')
        .map((n) => fixed.getSubmodule(n.target).constructor.name);
      expect(kinds).toEqual([
        'Quantize',
        ...new Array<string>(9).fill('FixedConv'),
        'FixedAvgPool2d',
        'FixedValueOp',
        'FixedConv',
        'Dequantize',
      ]);
      const convs = fixed.graph.nodes
        .filter((n) => n.op === 'call_module')
        .map((n) => fixed.getSubmodule(n.target))
        .filter((m): m is FixedConv => m instanceof FixedConv);
      expect(convs.filter((c) => c.config.sumin !== null).length).toBe(3);
      expect(convs.at(-1)!.config.requant).toBeNull();
      // brighter than calibrated: some activations saturate
      const x = uniformInput([8, 1, 28, 28], 3, -0.2, 1.5);
      const { comparison, summary } = await exportAndCompare(fixed, x);
      expect(comparison.nodes.length).toBe(kinds.length);
      expect(summary).toBe(`all ${kinds.length} compared values identical`);
    });
  }

  itWithOnnxChecker('bayes qint16: the exported file passes onnx.checker (full check)', (python) => {
    const bytes = exportOnnxBytes(residualFixed('bayes', 'qint16'), [uniformInput([2, 1, 28, 28], 3, 0, 1)]);
    const path = join(mkdtempSync(join(tmpdir(), 'qtk-int-onnx-')), 'residual.onnx');
    writeFileSync(path, bytes);
    expect(onnxCheck(python, path)).toBeNull();
  });
});
