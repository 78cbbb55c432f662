import './index.js'; // the QDQ and integer export rules
import { describe, expect, test } from 'vitest';
import { formatRuntimeComparison } from './compare-runtime.js';
import { compareWithRuntime } from './node/compare-with-runtime.js';
import { exportOnnxBytes, decodeModel, encodeModel } from '@qtk/onnx';
import { fixedPointOf, uniformInput } from './testing/fixed-models.js';
import { PoolReluNet } from './testing/pool-relu-net.js';

const fixed = fixedPointOf(new PoolReluNet(), { march: 'bayes', calibration: [uniformInput([4, 2, 6, 6], 1, -2, 2)] });
const x = uniformInput([3, 2, 6, 6], 2, -2, 2);
const bytes = exportOnnxBytes(fixed, [x]);

/** The exported file with the float or double initializer of one node's constant scaled by `factor`. */
function withScaledConstant(prefix: string, factor: number): Uint8Array {
  const model = decodeModel(bytes);
  const init = model.graph!.initializer!.find((t) => t.name!.startsWith(prefix))!;
  const raw = Uint8Array.from(init.raw_data!).buffer;
  const values = init.data_type === 11 ? new Float64Array(raw) : new Float32Array(raw);
  values[0] = values[0]! * factor;
  init.raw_data = new Uint8Array(values.buffer);
  return encodeModel(model);
}

describe('compareWithRuntime', () => {
  test('reports every node identical for the exported model, in execution order', async () => {
    const c = await compareWithRuntime(fixed, bytes, [x]);
    expect(c.identical).toBe(true);
    expect(c.nodes.map((n) => n.node)).toEqual(['quant', 'pool', 'relu', 'flatten', 'dequant']);
    expect(c.nodes.map((n) => n.dtype)).toEqual(['qint8', 'qint8', 'qint8', 'qint8', 'float32']);
    expect(c.nodes[0]!.elements).toBe(3 * 2 * 6 * 6);
    expect(formatRuntimeComparison(c)).toBe('all 5 compared values identical');
  });

  test('names the first node that differs, with the first differing element', async () => {
    // A quantize scale 3 % larger in the file moves some integers by one step: the quantize is where it starts.
    const c = await compareWithRuntime(fixed, withScaledConstant('quant_scale', 1.03), [x]);
    expect(c.identical).toBe(false);
    expect(c.firstDifference!.node).toBe('quant');
    expect(c.firstDifference!.mismatches).toBeGreaterThan(0);
    expect(c.firstDifference!.maxAbsDiff).toBeGreaterThanOrEqual(1);
    const { index, qtk, runtime } = c.firstDifference!.first!;
    expect(Math.abs(qtk - runtime)).toBeGreaterThanOrEqual(1);
    expect(index).toBeGreaterThanOrEqual(0);
    expect(formatRuntimeComparison(c)).toMatch(
      /^first difference at node 'quant' \(Quantize, ONNX value '.+'\): \d+ of 216 elements differ/,
    );
    // Downstream nodes differ too, but the dequantize's own constant was not touched.
    const late = await compareWithRuntime(fixed, withScaledConstant('dequant_scale', 2), [x], {
      nodes: ['relu', 'dequant'],
    });
    expect(late.nodes.map((n) => [n.node, n.mismatches > 0])).toEqual([
      ['relu', false],
      ['dequant', true],
    ]);
  });

  test('refuses files without the node map, unknown nodes and a wrong input count', async () => {
    const stripped = decodeModel(bytes);
    stripped.metadata_props = [];
    await expect(compareWithRuntime(fixed, encodeModel(stripped), [x])).rejects.toThrow(
      /no 'qtk.node_values' metadata/,
    );
    await expect(compareWithRuntime(fixed, bytes, [x], { nodes: ['nope'] })).rejects.toThrow(
      /no ONNX value for node\(s\) 'nope'/,
    );
    await expect(compareWithRuntime(fixed, bytes, [x, x])).rejects.toThrow(/takes 1 inputs, got 2/);
  });
});
