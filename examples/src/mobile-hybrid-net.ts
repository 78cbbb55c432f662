import { BatchNorm2d, Conv2d, FloatFunctional, ReLU, Sequential, Tanh, Upsample } from '@qtk/nn';
import type { Tensor } from '@qtk/tensor';
import { MobileBackbone, type MobileNetOptions } from './mobile-se-net.js';

/**
 * A MobileNetV3-style Fashion-MNIST classifier with a small feature-pyramid merge, made of the ops
 * a hybrid (BPU + CPU) deployment has to place: hardswish after the stem and inside the inverted
 * blocks, a depthwise 3×3 in each block and in the merge, sigmoid-gated squeeze-excite with a
 * global average pool, a nearest ×2 upsample of the 7×7 features concatenated with the 14×14 stem
 * features, and a tanh on the head features before the classifier.
 *
 *   quant → stem (3×3 s2, 16 ch, 14×14) ─────────────────────────────┐
 *           → block1 (16→32→24, s2, 7×7) → block2 (24→64→32, 7×7)    │
 *           → upsample ×2 (32 ch, 14×14) → cat with the stem (48 ch) ┘
 *           → merge: depthwise 3×3 s2 + ReLU, 1×1 to 64 + tanh (7×7)
 *           → global average pool → fc (10) → dequant
 */
export class MobileHybridNet extends MobileBackbone {
  readonly up = new Upsample({ scaleFactor: 2, mode: 'nearest' });
  readonly cat = new FloatFunctional();
  readonly mergeDepthwise: Sequential;
  readonly mergePointwise: Sequential;

  constructor(options: MobileNetOptions = {}) {
    super(options);
    const g = options.generator;
    this.mergeDepthwise = new Sequential(
      new Conv2d(48, 48, 3, { stride: 2, padding: 1, groups: 48, bias: false, generator: g }),
      new BatchNorm2d(48),
      new ReLU(),
    );
    this.mergePointwise = new Sequential(
      new Conv2d(48, 64, 1, { bias: false, generator: g }),
      new BatchNorm2d(64),
      new Tanh(),
    );
    this.addClassifier(g);
  }

  forward(x: Tensor): Tensor {
    const fine = this.stem.call(this.quant.call(x));
    const coarse = this.block2.call(this.block1.call(fine));
    const merged = this.cat.cat([this.up.call(coarse), fine], 1);
    const y = this.mergePointwise.call(this.mergeDepthwise.call(merged));
    return this.classify(y);
  }
}
