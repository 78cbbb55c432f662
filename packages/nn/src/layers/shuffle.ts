import { InvalidArgumentError, reshape, permute, ShapeError, type Tensor } from '@qtk/tensor';
import { Module } from '../module.js';

function factorOf(name: string, what: string, v: number): void {
  if (!Number.isInteger(v) || v < 1)
    throw new InvalidArgumentError(`${name}: ${what} must be a positive integer, got ${v}`);
}

/**
 * A rearrangement of a [N, C, H, W] tensor's elements by a positive integer factor: a view of it as a 5- or 6-d
 * tensor, a permutation of that view's axes, and the result's shape. Each subclass says how, and names its factor.
 */
abstract class Rearrange extends Module {
  protected constructor(
    private readonly label: string,
    private readonly factorName: string,
    protected readonly factor: number,
  ) {
    super();
    factorOf(label, factorName, factor);
  }
  /** The view, the permutation and the output shape for input dims N, C, H, W; throws when they do not divide. */
  protected abstract plan(
    n: number,
    c: number,
    h: number,
    w: number,
  ): { view: number[]; perm: number[]; out: number[] };
  forward(x: Tensor): Tensor {
    if (x.ndim !== 4) throw new ShapeError(`${this.label}: input must be 4-d [N, C, H, W], got [${x.shape}]`);
    const [n, c, h, w] = x.shape as unknown as [number, number, number, number];
    const { view, perm, out } = this.plan(n, c, h, w);
    return reshape(permute(reshape(x, view), perm), out);
  }
  override extraRepr(): string {
    return `${this.factorName}=${this.factor}`;
  }
}

/** [N, C·r², H, W] → [N, C, H·r, W·r], like PyTorch's nn.PixelShuffle (ONNX DepthToSpace, mode CRD). */
export class PixelShuffle extends Rearrange {
  constructor(readonly upscaleFactor: number) {
    super('PixelShuffle', 'upscaleFactor', upscaleFactor);
  }
  protected plan(N: number, C: number, H: number, W: number) {
    const r = this.upscaleFactor;
    if (C % (r * r) !== 0)
      throw new ShapeError(`PixelShuffle: ${C} channels are not divisible by upscaleFactor² = ${r * r}`);
    const c = C / (r * r);
    return { view: [N, c, r, r, H, W], perm: [0, 1, 4, 2, 5, 3], out: [N, c, H * r, W * r] };
  }
}

/** [N, C, H·r, W·r] → [N, C·r², H, W], like PyTorch's nn.PixelUnshuffle (ONNX SpaceToDepth). */
export class PixelUnshuffle extends Rearrange {
  constructor(readonly downscaleFactor: number) {
    super('PixelUnshuffle', 'downscaleFactor', downscaleFactor);
  }
  protected plan(N: number, C: number, H: number, W: number) {
    const r = this.downscaleFactor;
    if (H % r !== 0 || W % r !== 0)
      throw new ShapeError(`PixelUnshuffle: spatial size ${H}×${W} is not divisible by downscaleFactor ${r}`);
    return { view: [N, C, H / r, r, W / r, r], perm: [0, 1, 3, 5, 2, 4], out: [N, C * r * r, H / r, W / r] };
  }
}

/** Interleaves `groups` channel groups: [N, g·k, H, W] viewed as [N, g, k, H, W], transposed to [N, k, g, H, W] (nn.ChannelShuffle). */
export class ChannelShuffle extends Rearrange {
  constructor(readonly groups: number) {
    super('ChannelShuffle', 'groups', groups);
  }
  protected plan(N: number, C: number, H: number, W: number) {
    const g = this.groups;
    if (C % g !== 0) throw new ShapeError(`ChannelShuffle: ${C} channels are not divisible by groups = ${g}`);
    return { view: [N, g, C / g, H, W], perm: [0, 2, 1, 3, 4], out: [N, C, H, W] };
  }
}
