// Small seeded transformer encoders (a ViT, a BERT-style encoder, ConvNeXt blocks) for the bayes conversion test
// (transformer-encoders.test.ts) and the PyTorch FX comparison (scripts/transformer-sqnr/).
import { Conv2d, DeQuantStub, GELU, LayerNorm, Linear, Module, Parameter, QuantStub, Softmax } from '@qtk/nn';
import { cat, Generator, randn, type Tensor } from '@qtk/tensor';

export interface EncoderSize {
  /** model width */
  readonly dim: number;
  readonly heads: number;
  /** tokens per sequence */
  readonly tokens: number;
  /** MLP hidden width */
  readonly hidden: number;
}

/** Multi-head self-attention as PyTorch writes it: one qkv Linear, q·kᵀ·scale, softmax over the keys, ·v. */
export class SelfAttention extends Module {
  readonly qkv: Linear;
  readonly proj: Linear;
  readonly softmax = new Softmax(-1);

  constructor(
    readonly size: EncoderSize,
    generator: Generator,
  ) {
    super();
    this.qkv = new Linear(size.dim, 3 * size.dim, { generator });
    this.proj = new Linear(size.dim, size.dim, { generator });
  }

  forward(x: Tensor): Tensor {
    const { dim, heads, tokens } = this.size;
    const headDim = dim / heads;
    const [q, k, v] = this.qkv.call(x).split(dim, -1) as [Tensor, Tensor, Tensor];
    const split = (t: Tensor) => t.reshape([-1, tokens, heads, headDim]).transpose(1, 2);
    const scores = split(q)
      .matmul(split(k).transpose(-2, -1))
      .mul(1 / Math.sqrt(headDim));
    const attended = this.softmax.call(scores).matmul(split(v));
    return this.proj.call(attended.transpose(1, 2).reshape([-1, tokens, dim]));
  }
}

/** An encoder layer: attention and a GELU MLP, each with a residual; pre-norm (ViT) or post-norm (BERT). */
export class EncoderLayer extends Module {
  readonly norm1: LayerNorm;
  readonly attn: SelfAttention;
  readonly norm2: LayerNorm;
  readonly fc1: Linear;
  readonly act = new GELU();
  readonly fc2: Linear;

  constructor(
    size: EncoderSize,
    readonly preNorm: boolean,
    generator: Generator,
  ) {
    super();
    this.norm1 = new LayerNorm(size.dim);
    this.attn = new SelfAttention(size, generator);
    this.norm2 = new LayerNorm(size.dim);
    this.fc1 = new Linear(size.dim, size.hidden, { generator });
    this.fc2 = new Linear(size.hidden, size.dim, { generator });
    // non-trivial affine parameters, as a trained model has
    for (const norm of [this.norm1, this.norm2]) {
      norm.weight!.values().set(randn([size.dim], { generator, std: 0.1 }).add(1).values() as Float32Array);
      norm.bias!.values().set(randn([size.dim], { generator, std: 0.1 }).values() as Float32Array);
    }
  }

  private mlp(x: Tensor): Tensor {
    return this.fc2.call(this.act.call(this.fc1.call(x)));
  }

  forward(x: Tensor): Tensor {
    if (this.preNorm) {
      const y = x.add(this.attn.call(this.norm1.call(x)));
      return y.add(this.mlp(this.norm2.call(y)));
    }
    const y = this.norm1.call(x.add(this.attn.call(x)));
    return this.norm2.call(y.add(this.mlp(y)));
  }
}

/**
 * A ViT: 4×4 patch-embedding conv on [N, 3, 16, 16] images, a class token and a position embedding
 * (plain parameters, quantized where they enter the quantized ops), two pre-norm layers, a final
 * LayerNorm and a linear head on the class token.
 */
export class TinyVit extends Module {
  static readonly size: EncoderSize = { dim: 32, heads: 4, tokens: 17, hidden: 64 };
  readonly quant = new QuantStub();
  readonly patch: Conv2d;
  readonly classToken: Parameter;
  readonly position: Parameter;
  readonly layer0: EncoderLayer;
  readonly layer1: EncoderLayer;
  readonly norm = new LayerNorm(TinyVit.size.dim);
  readonly head: Linear;
  readonly dequant = new DeQuantStub();

  /** `batch`: the class token is expanded to it (reading `x.shape[0]` of a quantized value has no conversion rule yet). */
  constructor(
    seed = 1,
    readonly batch = 4,
  ) {
    super();
    const generator = new Generator(seed);
    const { dim, tokens } = TinyVit.size;
    this.patch = new Conv2d(3, dim, 4, { stride: 4, generator });
    this.classToken = new Parameter(randn([1, 1, dim], { generator, std: 0.5 }));
    this.position = new Parameter(randn([1, tokens, dim], { generator, std: 0.5 }));
    this.layer0 = new EncoderLayer(TinyVit.size, true, generator);
    this.layer1 = new EncoderLayer(TinyVit.size, true, generator);
    this.head = new Linear(dim, 10, { generator });
  }

  forward(x: Tensor): Tensor {
    const { dim } = TinyVit.size;
    const patches = this.patch.call(this.quant.call(x)).flatten(2).transpose(1, 2);
    const classTokens = this.classToken.expand([this.batch, 1, dim]);
    let t = cat([classTokens, patches], 1).add(this.position);
    t = this.layer1.call(this.layer0.call(t));
    const cls = this.norm.call(t).slice({ axis: 1, start: 0, end: 1 }).reshape([-1, dim]);
    return this.dequant.call(this.head.call(cls));
  }
}

/** A BERT-style encoder on [N, 16, 32] token embeddings: two post-norm layers, the sequence out. */
export class TinyBert extends Module {
  static readonly size: EncoderSize = { dim: 32, heads: 4, tokens: 16, hidden: 128 };
  readonly quant = new QuantStub();
  readonly layer0: EncoderLayer;
  readonly layer1: EncoderLayer;
  readonly dequant = new DeQuantStub();

  constructor(seed = 2) {
    super();
    const generator = new Generator(seed);
    this.layer0 = new EncoderLayer(TinyBert.size, false, generator);
    this.layer1 = new EncoderLayer(TinyBert.size, false, generator);
  }

  forward(x: Tensor): Tensor {
    return this.dequant.call(this.layer1.call(this.layer0.call(this.quant.call(x))));
  }
}

/** A ConvNeXt block: 7×7 depthwise conv, LayerNorm over channels (channels last), GELU MLP, layer scale, residual. */
export class ConvNextBlock extends Module {
  readonly dwconv: Conv2d;
  readonly norm: LayerNorm;
  readonly fc1: Linear;
  readonly act = new GELU();
  readonly fc2: Linear;
  readonly layerScale: Parameter;

  constructor(channels: number, generator: Generator) {
    super();
    this.dwconv = new Conv2d(channels, channels, 7, { padding: 3, groups: channels, generator });
    this.norm = new LayerNorm(channels);
    this.fc1 = new Linear(channels, 4 * channels, { generator });
    this.fc2 = new Linear(4 * channels, channels, { generator });
    this.layerScale = new Parameter(randn([channels], { generator, std: 0.3 }));
  }

  forward(x: Tensor): Tensor {
    const y = this.norm.call(this.dwconv.call(x).permute(0, 2, 3, 1));
    const z = this.fc2.call(this.act.call(this.fc1.call(y))).mul(this.layerScale);
    return x.add(z.permute(0, 3, 1, 2));
  }
}

/** A ConvNeXt stage on [N, 3, 32, 32] images: a 4×4 patchify stem and two blocks of 16 channels. */
export class TinyConvNext extends Module {
  readonly quant = new QuantStub();
  readonly stem: Conv2d;
  readonly block0: ConvNextBlock;
  readonly block1: ConvNextBlock;
  readonly dequant = new DeQuantStub();

  constructor(seed = 3) {
    super();
    const generator = new Generator(seed);
    this.stem = new Conv2d(3, 16, 4, { stride: 4, generator });
    this.block0 = new ConvNextBlock(16, generator);
    this.block1 = new ConvNextBlock(16, generator);
  }

  forward(x: Tensor): Tensor {
    return this.dequant.call(this.block1.call(this.block0.call(this.stem.call(this.quant.call(x)))));
  }
}
