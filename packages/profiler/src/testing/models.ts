// A small residual network and its quantized stages for the profiler's tests. Not a test file itself
// and not part of the package build.
import { calibrate, convertFx, prepareQatFx } from '@qtk/core';
import { defaultQatOutQconfig, getDefaultQconfig, setFakeQuantize } from '@qtk/fake-quant';
import { type GraphModule, symbolicTrace } from '@qtk/ir';
import { AdaptiveAvgPool2d, BatchNorm2d, Conv2d, DeQuantStub, Flatten, Linear, Module, QuantStub, ReLU } from '@qtk/nn';
import { Generator, rand, type Tensor } from '@qtk/tensor';

/** quant → conv-bn-relu → conv-bn + add (residual) → relu → conv → average pool → linear → dequant. */
export class TinyResNet extends Module {
  readonly quant = new QuantStub();
  readonly conv0: Conv2d;
  readonly bn0 = new BatchNorm2d(8);
  readonly relu0 = new ReLU();
  readonly conv1: Conv2d;
  readonly bn1 = new BatchNorm2d(8);
  readonly relu1 = new ReLU();
  readonly conv2: Conv2d;
  readonly pool = new AdaptiveAvgPool2d(1);
  readonly flatten = new Flatten();
  readonly fc: Linear;
  readonly dequant = new DeQuantStub();

  constructor(seed = 7) {
    super();
    const generator = new Generator(seed);
    this.conv0 = new Conv2d(3, 8, 3, { padding: 1, generator });
    this.conv1 = new Conv2d(8, 8, 3, { padding: 1, generator });
    this.conv2 = new Conv2d(8, 16, 1, { generator });
    this.fc = new Linear(16, 4, { generator });
  }

  forward(x: Tensor): Tensor {
    const y = this.relu0.call(this.bn0.call(this.conv0.call(this.quant.call(x))));
    const z = this.relu1.call(this.bn1.call(this.conv1.call(y)).add(y));
    return this.dequant.call(this.fc.call(this.flatten.call(this.pool.call(this.conv2.call(z)))));
  }
}

/** Random inputs in [-1, 1] of shape [n, 3, 8, 8]. */
export const randomInputs = (seed: number, n = 4): Tensor =>
  rand([n, 3, 8, 8], { generator: new Generator(seed) })
    .mul(2)
    .sub(1);

export interface Stages {
  readonly float: GraphModule;
  /** Calibrated fake-quant model in VALIDATION state. */
  readonly calibrated: GraphModule;
  readonly fixed: GraphModule;
}

/** The float, calibrated and fixed-point stages of `model` on `march` (min-max observers, fc as high-precision output). */
export function stagesOf(model: Module, march: string, batches = [1, 2, 3].map((s) => randomInputs(s, 8))): Stages {
  model.eval();
  const float = symbolicTrace(model);
  const qconfig = getDefaultQconfig('fake_quant', 'fake_quant', 'min_max', 'min_max');
  const calibrated = prepareQatFx(
    model,
    { global: qconfig, moduleName: { fc: defaultQatOutQconfig } },
    { march, onWarning: () => {} },
  );
  calibrate(calibrated, batches);
  setFakeQuantize(calibrated, 'VALIDATION');
  const fixed = convertFx(calibrated, { march, onWarning: () => {} });
  return { float, calibrated, fixed };
}
