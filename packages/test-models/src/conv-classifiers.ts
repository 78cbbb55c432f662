// Small image classifiers of conv-bn-relu blocks, a skip add, pool and linear, that the conversion, model-file,
// calibration and export tests build with their own channels, biases, optional layers and seeds.
import * as nn from '@qtk/nn';
import type { Generator, Tensor } from '@qtk/tensor';

export interface ConvBnReluNetOptions {
  generator: Generator;
  inChannels: number;
  /** Output channels of every block. */
  channels: number;
  classes: number;
  /** One entry per conv-bn-relu block (two or three): whether its 3×3 conv has a bias. */
  convBias: readonly [boolean, boolean] | readonly [boolean, boolean, boolean];
  /** Add the first block's output to the last block's BN output, before its ReLU (fused into ConvAddReLU). */
  residual: boolean;
  /** Fixed scale of the input QuantStub; default: observed. */
  inputScale?: number;
  /** A 2×2 max pool (stride 1) then a 2×2 average pool (stride 2) after the last block; default false. */
  downsample?: boolean;
}

/**
 * quant → conv-bn-relu ×2 or ×3 (the last with an optional residual add of the first's output) → optional
 * max and average pools → global average pool → flatten → linear → dequant. The fields are set in that order, and the generator draws the
 * convs' weights in order, then the Linear's: the children and the weights of a hand-written class of the
 * same layers.
 */
export class ConvBnReluNet extends nn.Module {
  declare readonly quant: nn.QuantStub;
  declare readonly conv1: nn.Conv2d;
  declare readonly bn1: nn.BatchNorm2d;
  declare readonly relu1: nn.ReLU;
  declare readonly conv2: nn.Conv2d;
  declare readonly bn2: nn.BatchNorm2d;
  declare readonly relu2: nn.ReLU;
  declare readonly conv3?: nn.Conv2d;
  declare readonly bn3?: nn.BatchNorm2d;
  declare readonly relu3?: nn.ReLU;
  declare readonly maxpool?: nn.MaxPool2d;
  declare readonly avgpool?: nn.AvgPool2d;
  declare readonly pool: nn.AdaptiveAvgPool2d;
  declare readonly flatten: nn.Flatten;
  declare readonly fc: nn.Linear;
  declare readonly dequant: nn.DeQuantStub;
  /** Whether the last block adds the first block's output. */
  readonly residual: boolean;

  constructor(o: ConvBnReluNetOptions) {
    super();
    this.residual = o.residual;
    this.setChild('quant', new nn.QuantStub({ scale: o.inputScale }));
    o.convBias.forEach((bias, i) => {
      const cin = i === 0 ? o.inChannels : o.channels;
      this.setChild(`conv${i + 1}`, new nn.Conv2d(cin, o.channels, 3, { padding: 1, bias, generator: o.generator }));
      this.setChild(`bn${i + 1}`, new nn.BatchNorm2d(o.channels));
      this.setChild(`relu${i + 1}`, new nn.ReLU());
    });
    if (o.downsample) {
      this.setChild('maxpool', new nn.MaxPool2d(2, { stride: 1 }));
      this.setChild('avgpool', new nn.AvgPool2d(2, { stride: 2 }));
    }
    this.setChild('pool', new nn.AdaptiveAvgPool2d(1));
    this.setChild('flatten', new nn.Flatten({ startDim: 1 }));
    this.setChild('fc', new nn.Linear(o.channels, o.classes, { generator: o.generator }));
    this.setChild('dequant', new nn.DeQuantStub());
  }

  forward(x: Tensor): Tensor {
    const first = this.relu1.call(this.bn1.call(this.conv1.call(this.quant.call(x))));
    const rest: [nn.Conv2d, nn.BatchNorm2d, nn.ReLU][] = [[this.conv2, this.bn2, this.relu2]];
    if (this.conv3 && this.bn3 && this.relu3) rest.push([this.conv3, this.bn3, this.relu3]);
    let y = first;
    rest.forEach(([conv, bn, relu], i) => {
      const z = bn.call(conv.call(y));
      y = relu.call(this.residual && i === rest.length - 1 ? z.add(first) : z);
    });
    if (this.maxpool && this.avgpool) y = this.avgpool.call(this.maxpool.call(y));
    return this.dequant.call(this.fc.call(this.flatten.call(this.pool.call(y))));
  }
}

export interface ConvSkipNetOptions {
  generator: Generator;
  inChannels: number;
  /** A Sigmoid (a table op on bayes) on the second conv's output, before the add; default false. */
  sigmoid?: boolean;
}

/**
 * 4 channels, 3 classes: quant → conv-bn-relu (`a`) → conv → optional sigmoid → add `a` → global average pool →
 * flatten → linear → dequant. The generator draws conv1, conv2, then fc.
 */
export class ConvSkipNet extends nn.Module {
  readonly quant = new nn.QuantStub();
  readonly conv1: nn.Conv2d;
  readonly bn1 = new nn.BatchNorm2d(4);
  readonly relu1 = new nn.ReLU();
  readonly conv2: nn.Conv2d;
  declare readonly sig?: nn.Sigmoid;
  declare readonly pool: nn.AdaptiveAvgPool2d;
  declare readonly flatten: nn.Flatten;
  declare readonly fc: nn.Linear;
  declare readonly dequant: nn.DeQuantStub;

  constructor(o: ConvSkipNetOptions) {
    super();
    const generator = o.generator;
    this.conv1 = new nn.Conv2d(o.inChannels, 4, 3, { padding: 1, generator });
    this.conv2 = new nn.Conv2d(4, 4, 3, { padding: 1, generator });
    if (o.sigmoid) this.setChild('sig', new nn.Sigmoid());
    this.setChild('pool', new nn.AdaptiveAvgPool2d(1));
    this.setChild('flatten', new nn.Flatten({ startDim: 1 }));
    this.setChild('fc', new nn.Linear(4, 3, { generator }));
    this.setChild('dequant', new nn.DeQuantStub());
  }

  forward(x: Tensor): Tensor {
    const a = this.relu1.call(this.bn1.call(this.conv1.call(this.quant.call(x))));
    const conv = this.conv2.call(a);
    const b = (this.sig ? this.sig.call(conv) : conv).add(a);
    return this.dequant.call(this.fc.call(this.flatten.call(this.pool.call(b))));
  }
}
