// The reference network converted to a march's fixed point (untrained weights, BatchNorm statistics
// from one training-mode pass, calibrated on uniform [-1, 1) images), its Linear head kept as a
// high-precision int32 output: the model the integer ONNX test and timing use.
import '@qtk/march-bayes';
import '@qtk/march-bernoulli2';
import { calibrate, convertFx, prepareQatFx } from '@qtk/core';
import { defaultQatOutQconfig, getDefaultQatQconfig } from '@qtk/fake-quant';
import type { GraphModule } from '@qtk/ir';
import { Generator, rand, randn } from '@qtk/tensor';
import { ReferenceNet } from './reference-net.js';
import type { ObserverDType } from '@qtk/spec';

export function fixedReferenceNet(march: string, dtype: ObserverDType): GraphModule {
  const model = new ReferenceNet({ generator: new Generator(7) });
  // One training-mode pass gives the BatchNorms non-trivial running statistics.
  model.train();
  model.call(randn([8, 1, 28, 28], { generator: new Generator(1) }));
  model.eval();
  const quiet = { march, onWarning: () => {} };
  const prepared = prepareQatFx(
    model,
    { global: getDefaultQatQconfig({ dtype }), moduleName: { fc: defaultQatOutQconfig } },
    quiet,
  );
  calibrate(prepared, [
    rand([16, 1, 28, 28], { generator: new Generator(2) })
      .mul(2)
      .sub(1),
  ]);
  return convertFx(prepared, quiet);
}
