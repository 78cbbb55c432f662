// Small models for the QDQ export tests: a conv net with a fused conv + add + relu, and a residual
// network shaped like QTK's reference classifier (stem, three residual blocks, pool, linear).
import { calibrate, prepareQatFx } from '@qtk/core';
import { getDefaultCalibQconfig, getDefaultQconfig, type QConfig } from '@qtk/fake-quant';
import type { GraphModule } from '@qtk/ir';
import {
  AdaptiveAvgPool2d,
  BatchNorm2d,
  Conv2d,
  DeQuantStub,
  Flatten,
  Linear,
  Module,
  QuantStub,
  ReLU,
  Sequential,
} from '@qtk/nn';
import { Generator, noGrad, randn, type Tensor, type RoundingMode } from '@qtk/tensor';
import type { ObserverDType } from '@qtk/spec';

/** conv-bn-relu, conv-bn + skip add + relu (one fused module), pool, linear; QuantStub / DeQuantStub around it. */
export class SmallConvNet extends Module {
  readonly quant = new QuantStub();
  readonly conv1: Conv2d;
  readonly bn1 = new BatchNorm2d(6);
  readonly relu1 = new ReLU();
  readonly conv2: Conv2d;
  readonly bn2 = new BatchNorm2d(6);
  readonly relu2 = new ReLU();
  readonly pool = new AdaptiveAvgPool2d(1);
  readonly flatten = new Flatten({ startDim: 1 });
  readonly fc: Linear;
  readonly dequant = new DeQuantStub();

  constructor(seed: number) {
    super();
    const g = new Generator(seed);
    this.conv1 = new Conv2d(3, 6, 3, { padding: 1, generator: g });
    this.conv2 = new Conv2d(6, 6, 3, { padding: 1, bias: false, generator: g });
    this.fc = new Linear(6, 5, { generator: g });
  }

  forward(x: Tensor): Tensor {
    const a = this.relu1.call(this.bn1.call(this.conv1.call(this.quant.call(x))));
    const b = this.relu2.call(this.bn2.call(this.conv2.call(a)).add(a));
    return this.dequant.call(this.fc.call(this.flatten.call(this.pool.call(b))));
  }
}

function conv3x3(cin: number, cout: number, stride: number, g: Generator): Conv2d {
  return new Conv2d(cin, cout, 3, { stride, padding: 1, bias: false, generator: g });
}

/** conv-bn-relu, conv-bn, shortcut (1x1 conv-bn when the shape changes), add, relu. */
class ResidualBlock extends Module {
  readonly conv1: Conv2d;
  readonly bn1: BatchNorm2d;
  readonly relu1 = new ReLU();
  readonly conv2: Conv2d;
  readonly bn2: BatchNorm2d;
  readonly short: Sequential | null;
  readonly relu2 = new ReLU();

  constructor(cin: number, cout: number, stride: number, g: Generator) {
    super();
    this.conv1 = conv3x3(cin, cout, stride, g);
    this.bn1 = new BatchNorm2d(cout);
    this.conv2 = conv3x3(cout, cout, 1, g);
    this.bn2 = new BatchNorm2d(cout);
    this.short =
      stride !== 1 || cin !== cout
        ? new Sequential(new Conv2d(cin, cout, 1, { stride, bias: false, generator: g }), new BatchNorm2d(cout))
        : null;
  }

  forward(x: Tensor): Tensor {
    const y = this.bn2.call(this.conv2.call(this.relu1.call(this.bn1.call(this.conv1.call(x)))));
    return this.relu2.call(y.add(this.short ? this.short.call(x) : x));
  }
}

/** A residual classifier shaped like QTK's reference network (1 input channel, 10 classes), narrower. */
export class ResidualNet extends Module {
  readonly quant = new QuantStub({ scale: 1 / 128 });
  readonly stem: Sequential;
  readonly layer1: ResidualBlock;
  readonly layer2: ResidualBlock;
  readonly layer3: ResidualBlock;
  readonly pool = new AdaptiveAvgPool2d(1);
  readonly flatten = new Flatten({ startDim: 1 });
  readonly fc: Linear;
  readonly dequant = new DeQuantStub();

  constructor(seed: number) {
    super();
    const g = new Generator(seed);
    this.stem = new Sequential(conv3x3(1, 8, 1, g), new BatchNorm2d(8), new ReLU());
    this.layer1 = new ResidualBlock(8, 8, 1, g);
    this.layer2 = new ResidualBlock(8, 16, 2, g);
    this.layer3 = new ResidualBlock(16, 32, 2, g);
    this.fc = new Linear(32, 10, { generator: g });
  }

  forward(x: Tensor): Tensor {
    let y = this.stem.call(this.quant.call(x));
    y = this.layer3.call(this.layer2.call(this.layer1.call(y)));
    return this.dequant.call(this.fc.call(this.flatten.call(this.pool.call(y))));
  }
}

/** Gives the BatchNorms running statistics (a few training-mode batches), then switches to eval. */
export function warmUp(model: Module, shape: number[], seed: number): void {
  const g = new Generator(seed);
  model.train();
  noGrad(() => {
    for (let i = 0; i < 3; i++) model.call(randn(shape, { generator: g }));
  });
  model.eval();
}

/** Random calibration batches in [-1, 1]. */
export function randomBatches(shape: number[], count: number, seed: number): Tensor[] {
  const g = new Generator(seed);
  return Array.from({ length: count }, () => randn(shape, { generator: g }).clamp(-1, 1));
}

export interface CalibratedOptions {
  march: string;
  /** Activation dtype (weights stay qint8). */
  dtype?: ObserverDType;
  /** A high-precision (no output fake-quant) qconfig for this module path. */
  outModule?: string;
  /** Activation rounding (default: the global default, half_up). */
  rounding?: RoundingMode;
}

/** Prepares `model` (fused by prepareQatFx) with min-max calibration qconfigs and calibrates it on `batches`. */
export function calibratedModel(model: Module, batches: readonly Tensor[], o: CalibratedOptions): GraphModule {
  const calib: QConfig = getDefaultCalibQconfig({
    dtype: o.dtype ?? 'qint8',
    calibQkwargs: o.rounding ? { rounding: o.rounding } : null,
  });
  const out = getDefaultQconfig(null, 'fake_quant', null, 'min_max', null, { state: 'CALIBRATION' });
  const gm = prepareQatFx(
    model,
    { global: calib, ...(o.outModule ? { moduleName: { [o.outModule]: out } } : {}) },
    { march: o.march, onWarning: () => {} },
  );
  calibrate(gm, batches, { onWarning: () => {} });
  return gm;
}
