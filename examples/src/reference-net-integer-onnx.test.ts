import { FixedAvgPool2d, FixedConv } from '@qtk/fixed-point';
import { exportOnnxBytes } from '@qtk/onnx';
import { formatRuntimeComparison } from '@qtk/onnx-deploy';
import { compareWithRuntime } from '@qtk/onnx-deploy/node';
import { Generator, rand } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { fixedReferenceNet } from './reference-net-fixed.js';

describe('the reference network as integer ONNX', () => {
  for (const [march, dtype] of [
    ['bayes', 'qint8'],
    ['bayes', 'qint16'],
    ['bernoulli2', 'qint8'],
  ] as const) {
    it(`${march} ${dtype}: every node's integers equal QTK's in onnxruntime, the int32 head included`, async () => {
      const fixed = fixedReferenceNet(march, dtype);
      const modules = fixed.graph.nodes.filter((n) => n.op === 'call_module').map((n) => fixed.getSubmodule(n.target));
      expect(modules.filter((m) => m instanceof FixedConv).length).toBe(10);
      expect(modules.filter((m) => m instanceof FixedConv && m.config.sumin !== null).length).toBe(3);
      expect(modules.some((m) => m instanceof FixedAvgPool2d)).toBe(true);
      const head = modules.filter((m) => m instanceof FixedConv).at(-1) as FixedConv;
      expect(head.config.kind).toBe('linear');
      expect(head.config.requant).toBeNull();
      // inputs beyond the calibrated [-1, 1]: the input quantize saturates
      const x = rand([16, 1, 28, 28], { generator: new Generator(3) })
        .mul(2.4)
        .sub(1.2);
      const comparison = await compareWithRuntime(fixed, exportOnnxBytes(fixed, [x]), [x]);
      expect(formatRuntimeComparison(comparison)).toBe(`all ${modules.length} compared values identical`);
    });
  }
});
