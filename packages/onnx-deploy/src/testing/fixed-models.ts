// Test helpers for the integer export: quantize a float model to a march's fixed point, export it,
// and compare every node's value in onnxruntime-node.
import '../index.js'; // the QDQ and integer export rules
import '@qtk/march-bayes';
import '@qtk/march-bernoulli2';
import { calibrate, convertFx, moduleNameRecord, prepareQatFx, type QConfigDict } from '@qtk/core';
import { defaultQatOutQconfig, getDefaultQatQconfig } from '@qtk/fake-quant';
import type { GraphModule } from '@qtk/ir';
import type { Module } from '@qtk/nn';
import { Generator, Tensor } from '@qtk/tensor';
import { formatRuntimeComparison, type RuntimeComparison } from '../compare-runtime.js';
import { compareWithRuntime } from '../node/compare-with-runtime.js';
import { exportOnnxBytes, type ExportOnnxOptions } from '@qtk/onnx';
import type { ObserverDType } from '@qtk/spec';

export interface FixedForTest {
  march: string;
  /** Activation dtype of the global qconfig (default qint8). */
  dtype?: ObserverDType;
  /** Extra qconfig dict entries (moduleName / moduleType), merged over the global one. */
  qconfig?: Partial<QConfigDict>;
  /** Node or module names kept as high-precision outputs (the "out" qconfig). */
  outModules?: readonly string[];
  calibration: readonly Tensor[];
}

/** Prepares, calibrates (min-max, the given batches) and converts a float model; returns the fixed-point model. */
export function fixedPointOf(float: Module, o: FixedForTest): GraphModule {
  float.eval();
  const moduleName = Object.fromEntries((o.outModules ?? []).map((n) => [n, defaultQatOutQconfig]));
  const prepared = prepareQatFx(
    float,
    {
      global: getDefaultQatQconfig({ dtype: o.dtype ?? 'qint8' }),
      ...o.qconfig,
      moduleName: { ...moduleName, ...(o.qconfig ? moduleNameRecord(o.qconfig) : {}) },
    },
    { march: o.march, onWarning: () => {} },
  );
  calibrate(prepared, o.calibration);
  return convertFx(prepared, { march: o.march, onWarning: () => {} });
}

/** Uniform float inputs in [lo, hi) of a shape, from a seeded generator. */
export function uniformInput(shape: number[], seed: number, lo = -1, hi = 1): Tensor {
  const g = new Generator(seed);
  const size = shape.reduce((a, d) => a * d, 1);
  const data = new Float32Array(size);
  for (let i = 0; i < size; i++) data[i] = lo + (hi - lo) * g.uniform();
  return new Tensor({ data, shape, dtype: 'float32' });
}

/** Exports a fixed-point model and compares every node's value in onnxruntime-node. */
export async function exportAndCompare(
  model: GraphModule,
  inputs: Tensor | readonly Tensor[],
  options: ExportOnnxOptions = {},
): Promise<{ bytes: Uint8Array; comparison: RuntimeComparison; summary: string }> {
  const list = inputs instanceof Tensor ? [inputs] : [...inputs];
  const bytes = exportOnnxBytes(model, list, options);
  const comparison = await compareWithRuntime(model, bytes, list);
  return { bytes, comparison, summary: formatRuntimeComparison(comparison) };
}
