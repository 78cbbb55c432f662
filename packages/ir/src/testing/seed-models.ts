// TypeScript versions of the example models of the horizon_plugin_pytorch guide that @qtk/ir's
// tests trace: the ConvBNAddReLU fusion nets, the hybrid model with `_SeluModule`, and a
// RetinaNet-style detector whose post-process and training branch are fxWrap-ed.
import {
  BatchNorm2d,
  Conv2d,
  DeQuantStub,
  FloatFunctional,
  Identity,
  Module,
  ModuleList,
  PReLU,
  QuantStub,
  ReLU,
} from '@qtk/nn';
import { add, cat, type Generator, mseLoss, selu, sigmoid, type Tensor, tensor } from '@qtk/tensor';
import { fxWrap } from '../fx-wrap.js';

/** Conv → BN → (+ y) → ReLU with functional add (the fuse_fx example). */
export class ModelForFusion extends Module {
  readonly quantx = new QuantStub();
  readonly quanty = new QuantStub();
  readonly conv: Conv2d;
  readonly bn = new BatchNorm2d(3);
  readonly relu = new ReLU();
  readonly dequant = new DeQuantStub();

  constructor(generator?: Generator) {
    super();
    this.conv = new Conv2d(3, 3, 3, { generator });
  }

  forward(x: Tensor, y: Tensor): Tensor {
    x = this.quantx.call(x);
    y = this.quanty.call(y);
    x = this.conv.call(x);
    x = this.bn.call(x);
    x = add(x, y);
    x = this.relu.call(x);
    return this.dequant.call(x);
  }
}

/** Conv → BN → FloatFunctional add → ReLU in a submodule (the profiler example's Conv2dModule). */
export class Conv2dModule extends Module {
  readonly conv2d: Conv2d;
  readonly add = new FloatFunctional();
  readonly bnMod: BatchNorm2d;
  readonly reluMod = new ReLU();

  constructor(inChannels: number, outChannels: number, generator?: Generator) {
    super();
    this.conv2d = new Conv2d(inChannels, outChannels, 1, { generator });
    this.bnMod = new BatchNorm2d(outChannels);
  }

  forward(x: Tensor, y: Tensor): Tensor {
    x = this.conv2d.call(x);
    x = this.bnMod.call(x);
    x = this.add.add(x, y);
    return this.reluMod.call(x);
  }
}

/** Three Conv2dModules, a conv shared by two inputs, and a FloatFunctional sub (TestFuseNet). */
export class TestFuseNet extends Module {
  readonly quantx = new QuantStub();
  readonly quanty = new QuantStub();
  readonly convmod1: Conv2dModule;
  readonly convmod2: Conv2dModule;
  readonly convmod3: Conv2dModule;
  readonly sharedConv: Conv2d;
  readonly bn1: BatchNorm2d;
  readonly bn2: BatchNorm2d;
  readonly sub = new FloatFunctional();
  readonly relu = new ReLU();
  readonly dequant = new DeQuantStub();

  constructor(channels: number, generator?: Generator) {
    super();
    this.convmod1 = new Conv2dModule(channels, channels, generator);
    this.convmod2 = new Conv2dModule(channels, channels, generator);
    this.convmod3 = new Conv2dModule(channels, channels, generator);
    this.sharedConv = new Conv2d(channels, channels, 1, { generator });
    this.bn1 = new BatchNorm2d(channels);
    this.bn2 = new BatchNorm2d(channels);
  }

  forward(x: Tensor, y: Tensor): Tensor {
    x = this.quantx.call(x);
    y = this.quanty.call(y);
    x = this.convmod1.call(x, y);
    x = this.convmod2.call(y, x);
    x = this.convmod3.call(x, y);
    x = this.sharedConv.call(x);
    x = this.bn1.call(x);
    y = this.sharedConv.call(y);
    y = this.bn2.call(y);
    x = this.sub.sub(x, y);
    x = this.relu.call(x);
    return this.dequant.call(x);
  }
}

export class ConvBlock extends Module {
  readonly conv: Conv2d;
  readonly prelu = new PReLU();

  constructor(channels: number, generator?: Generator) {
    super();
    this.conv = new Conv2d(channels, channels, 1, { generator });
  }

  forward(input: Tensor): Tensor {
    const x = this.prelu.call(this.conv.call(input));
    return selu(x);
  }
}

/** Wraps the functional selu as a module so it can be configured (run on CPU) on its own. */
export class _SeluModule extends Module {
  forward(input: Tensor): Tensor {
    return selu(input);
  }
}

/** The heterogeneous (CPU/BPU) example model. */
export class HybridModel extends Module {
  readonly quant = new QuantStub();
  readonly conv0: Conv2d;
  readonly prelu = new PReLU();
  readonly conv1: ConvBlock;
  readonly conv2: Conv2d;
  readonly conv3: Conv2d;
  readonly conv4: Conv2d;
  readonly selu = new _SeluModule();
  readonly dequant = new DeQuantStub();
  readonly identity = new Identity();

  constructor(channels = 3, generator?: Generator) {
    super();
    this.conv0 = new Conv2d(channels, channels, 1, { generator });
    this.conv1 = new ConvBlock(channels, generator);
    this.conv2 = new Conv2d(channels, channels, 1, { generator });
    this.conv3 = new Conv2d(channels, channels, 1, { generator });
    this.conv4 = new Conv2d(channels, channels, 1, { generator });
  }

  forward(input: Tensor): Tensor {
    let x = this.quant.call(input);
    x = this.conv0.call(x);
    x = this.identity.call(x);
    x = this.prelu.call(x);
    x = selu(x);
    x = this.conv1.call(x);
    x = this.conv2.call(x);
    x = this.conv3.call(x);
    x = this.identity.call(x);
    x = this.conv4.call(x);
    x = this.selu.call(x);
    return this.dequant.call(x);
  }
}

// ---- RetinaNet-style detector -------------------------------------------------------------------

class Backbone extends Module {
  readonly quant = new QuantStub();
  readonly conv: Conv2d;
  readonly relu = new ReLU();
  readonly down: Conv2d;

  constructor(generator?: Generator) {
    super();
    this.conv = new Conv2d(1, 4, 3, { padding: 1, generator });
    this.down = new Conv2d(4, 4, 3, { stride: 2, padding: 1, generator });
  }

  forward(img: Tensor): Tensor[] {
    const c1 = this.relu.call(this.conv.call(this.quant.call(img)));
    return [c1, this.down.call(c1)];
  }
}

class Head extends Module {
  readonly numClasses: number;
  readonly cls: ModuleList;
  readonly reg: ModuleList;
  readonly dequant = new DeQuantStub();

  constructor(numClasses: number, generator?: Generator) {
    super();
    this.numClasses = numClasses;
    this.cls = new ModuleList([0, 1].map(() => new Conv2d(4, numClasses, 1, { generator })));
    this.reg = new ModuleList([0, 1].map(() => new Conv2d(4, 4, 1, { generator })));
  }

  forward(feats: Tensor[]): [Tensor[], Tensor[]] {
    const cls = feats.map((f, i) => this.dequant.call((this.cls.getChild(String(i)) as Conv2d).call(f)));
    const reg = feats.map((f, i) => this.dequant.call((this.reg.getChild(String(i)) as Conv2d).call(f)));
    return [cls, reg];
  }
}

/** One anchor box per location: [cx, cy, 1, 1] in feature-map units, per level, concatenated. */
export class Anchors extends Module {
  calls = 0;
  forward(feats: Tensor[]): Tensor {
    this.calls++;
    const rows: number[] = [];
    for (const f of feats) {
      const [, , h, w] = f.shape as number[];
      for (let y = 0; y < h!; y++) for (let x = 0; x < w!; x++) rows.push(x + 0.5, y + 0.5, 1, 1);
    }
    return tensor(rows, [rows.length / 4, 4]);
  }
}

/** Decodes boxes and keeps, per image, the highest-scoring anchor (a stand-in for NMS). */
export class PostProcess extends Module {
  forward(
    anchors: Tensor,
    clsScores: Tensor,
    bboxPreds: Tensor,
  ): { boxes: number[][]; labels: number[]; scores: number[] } {
    const [n, a, c] = clsScores.shape as number[];
    const s = sigmoid(clsScores).toArray();
    const d = bboxPreds.toArray();
    const an = anchors.toArray();
    const boxes: number[][] = [];
    const labels: number[] = [];
    const scores: number[] = [];
    for (let i = 0; i < n!; i++) {
      let best = -1;
      let arg = 0;
      for (let j = 0; j < a! * c!; j++) if (s[i * a! * c! + j]! > best) [best, arg] = [s[i * a! * c! + j]!, j];
      const k = Math.floor(arg / c!);
      boxes.push([0, 1, 2, 3].map((q) => an[k * 4 + q]! + d[(i * a! + k) * 4 + q]!));
      labels.push(arg % c!);
      scores.push(best);
    }
    return { boxes, labels, scores };
  }
}

export interface RetinaData {
  img: Tensor;
  /** Training targets per anchor: [N, A, numClasses] and [N, A, 4]. */
  clsTarget?: Tensor;
  regTarget?: Tensor;
  predBboxes?: unknown;
}

/** The guide's RetinaNet: backbone and head are traced; the post-process with its training branch is one fxWrap-ed method. */
export class RetinaNet extends Module {
  readonly backbone: Backbone;
  readonly head: Head;
  readonly anchors = new Anchors();
  readonly postProcess = new PostProcess();

  constructor(numClasses = 3, generator?: Generator) {
    super();
    this.backbone = new Backbone(generator);
    this.head = new Head(numClasses, generator);
  }

  rearrangeHeadOut(inputs: Tensor[], num: number): Tensor {
    return cat(
      inputs.map((t) => t.permute(0, 2, 3, 1).reshape([t.shape[0]!, -1, num])),
      1,
    );
  }

  forward(data: RetinaData): RetinaData | { clsLoss: Tensor; regLoss: Tensor } {
    const feat = this.backbone.call(data.img);
    const [clsScores, bboxPreds] = this.head.call(feat);
    return this._postProcess(data, feat, clsScores, bboxPreds);
  }

  @fxWrap()
  _postProcess(
    data: RetinaData,
    feat: Tensor[],
    clsScores: Tensor[],
    bboxPreds: Tensor[],
  ): RetinaData | { clsLoss: Tensor; regLoss: Tensor } {
    const anchors = this.anchors.call(feat);
    const cls = this.rearrangeHeadOut(clsScores, this.head.numClasses);
    const reg = this.rearrangeHeadOut(bboxPreds, 4);
    if (this.training) {
      return { clsLoss: mseLoss(sigmoid(cls), data.clsTarget!), regLoss: mseLoss(reg, data.regTarget!) };
    }
    if ('predBboxes' in data) throw new Error('predBboxes is already in data');
    return { ...data, predBboxes: this.postProcess.call(anchors, cls, reg) };
  }
}
