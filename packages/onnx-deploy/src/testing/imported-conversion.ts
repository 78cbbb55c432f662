// Test helpers for converting imported ONNX graphs: import hand-made bytes, prepare for a march
// (int8), calibrate on seeded data and convert; run the fake-quant and fixed models.
import '@qtk/march-bayes';
import '@qtk/march-bernoulli2';
import { calibrate, convertFx, prepareQatFx } from '@qtk/core';
import { getDefaultQatQconfig, setFakeQuantize } from '@qtk/fake-quant';
import type { GraphModule } from '@qtk/ir';
import type { Tensor } from '@qtk/tensor';
import { importOnnx } from '@qtk/onnx';
import { uniformInput } from './fixed-models.js';

export interface ImportedConversion {
  readonly float: GraphModule;
  readonly prepared: GraphModule;
  readonly fixed: GraphModule;
  readonly input: Tensor;
}

/** Imports `bytes` with an input of `shape`, prepares for `march` (int8), calibrates on seeded uniform data, converts. */
export function convertImported(
  bytes: Uint8Array,
  shape: number[],
  o: { march: string; seed?: number; lo?: number; hi?: number },
): ImportedConversion {
  const input = uniformInput(shape, o.seed ?? 7, o.lo ?? -1, o.hi ?? 1);
  const float = importOnnx(bytes, { exampleInputs: { x: input }, onWarning: () => {} });
  float.eval();
  const prepared = prepareQatFx(
    float,
    { global: getDefaultQatQconfig({ dtype: 'qint8' }) },
    {
      march: o.march,
      inputQuantStubs: true,
      outputDeQuantStubs: true,
      onWarning: () => {},
    },
  );
  calibrate(prepared, [input]);
  const fixed = convertFx(prepared, { march: o.march, onWarning: () => {} });
  return { float, prepared, fixed, input };
}

/** The fake-quant model's output (VALIDATION) and the fixed-point model's, both float. */
export function runBoth(c: ImportedConversion): { fakeQuant: Float32Array; fixed: Float32Array } {
  setFakeQuantize(c.prepared, 'VALIDATION');
  const fakeQuant = Float32Array.from((c.prepared.call(c.input) as Tensor).values() as Float32Array);
  const fixed = Float32Array.from((c.fixed.call(c.input) as Tensor).values() as Float32Array);
  return { fakeQuant, fixed };
}
