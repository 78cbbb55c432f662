import { buildSegmentTable, nonlinear, planRequantizeWide, type SegmentTableV1 } from '@qtk/fixed-point';
import { describe, expect, test } from 'vitest';
import { OnnxExportError, OnnxBuilder } from '@qtk/onnx';
import { checkRequantizeExact } from './exact-bounds.js';
import { segmentTables } from './segment-emit.js';

describe('integer export: exactness bounds checked at export', () => {
  test('a requantize whose float64 product could pass 2^53 is refused, naming the step', () => {
    const plan = planRequantizeWide(1, 1 / 30000, 'qint16'); // m·2^-n ≈ 30000: a 15-bit multiplier, n = 0
    expect(plan.n[0]).toBe(0);
    expect(() => checkRequantizeExact('softmax s Σe', 2 ** 30, plan)).not.toThrow();
    expect(() => checkRequantizeExact('softmax s Σe', 2 ** 40, plan)).toThrow(OnnxExportError);
    expect(() => checkRequantizeExact('softmax s Σe', 2 ** 40, plan)).toThrow(/softmax s Σe.*2\^53/);
  });

  test("a segment line whose intercept leaves exact float64 integers is refused; the catalogue's are exact", () => {
    const t = buildSegmentTable(nonlinear.tanh, { sIn: 1 / 4096, sOut: 1 / 32767, outDtype: 'qint16' });
    const b = new OnnxBuilder(13);
    expect(() => segmentTables(b, 'x', [t], -1, 2, 'ok')).not.toThrow();
    const broken: SegmentTableV1 = { ...t, lines: [{ ...t.lines[0], beta: 2 ** 60 }, t.lines[1]] };
    expect(() => segmentTables(new OnnxBuilder(13), 'x', [broken], -1, 2, 'act')).toThrow(
      /act: segment line 0 of tanh/,
    );
  });
});
