import { InvalidArgumentError, reshape, permute, ShapeError, type Tensor } from '@qtk/tensor';
import { Module } from '../module.js';

function factor(name: string, what: string, v: number): number {
  if (!Number.isInteger(v) || v < 1)
    throw new InvalidArgumentError(`${name}: ${what} must be a positive integer, got ${v}`);
  return v;
}

function dims4(name: string, x: Tensor): [number, number, number, number] {
  if (x.ndim !== 4) throw new ShapeError(`${name}: input must be 4-d [N, C, H, W], got [${x.shape}]`);
  return x.shape as unknown as [number, number, number, number];
}

/** [N, C·r², H, W] → [N, C, H·r, W·r], like PyTorch's nn.PixelShuffle (ONNX DepthToSpace, mode CRD). */
export class PixelShuffle extends Module {
  readonly upscaleFactor: number;
  constructor(upscaleFactor: number) {
    super();
    this.upscaleFactor = factor('PixelShuffle', 'upscaleFactor', upscaleFactor);
  }
  forward(x: Tensor): Tensor {
    const [N, C, H, W] = dims4('PixelShuffle', x);
    const r = this.upscaleFactor;
    if (C % (r * r) !== 0)
      throw new ShapeError(`PixelShuffle: ${C} channels are not divisible by upscaleFactor² = ${r * r}`);
    const c = C / (r * r);
    return reshape(permute(reshape(x, [N, c, r, r, H, W]), [0, 1, 4, 2, 5, 3]), [N, c, H * r, W * r]);
  }
  override extraRepr(): string {
    return `upscaleFactor=${this.upscaleFactor}`;
  }
}

/** [N, C, H·r, W·r] → [N, C·r², H, W], like PyTorch's nn.PixelUnshuffle (ONNX SpaceToDepth). */
export class PixelUnshuffle extends Module {
  readonly downscaleFactor: number;
  constructor(downscaleFactor: number) {
    super();
    this.downscaleFactor = factor('PixelUnshuffle', 'downscaleFactor', downscaleFactor);
  }
  forward(x: Tensor): Tensor {
    const [N, C, H, W] = dims4('PixelUnshuffle', x);
    const r = this.downscaleFactor;
    if (H % r !== 0 || W % r !== 0)
      throw new ShapeError(`PixelUnshuffle: spatial size ${H}×${W} is not divisible by downscaleFactor ${r}`);
    return reshape(permute(reshape(x, [N, C, H / r, r, W / r, r]), [0, 1, 3, 5, 2, 4]), [N, C * r * r, H / r, W / r]);
  }
  override extraRepr(): string {
    return `downscaleFactor=${this.downscaleFactor}`;
  }
}

/** Interleaves `groups` channel groups: [N, g·k, H, W] viewed as [N, g, k, H, W], transposed to [N, k, g, H, W] (nn.ChannelShuffle). */
export class ChannelShuffle extends Module {
  readonly groups: number;
  constructor(groups: number) {
    super();
    this.groups = factor('ChannelShuffle', 'groups', groups);
  }
  forward(x: Tensor): Tensor {
    const [N, C, H, W] = dims4('ChannelShuffle', x);
    const g = this.groups;
    if (C % g !== 0) throw new ShapeError(`ChannelShuffle: ${C} channels are not divisible by groups = ${g}`);
    return reshape(permute(reshape(x, [N, g, C / g, H, W]), [0, 2, 1, 3, 4]), [N, C, H, W]);
  }
  override extraRepr(): string {
    return `groups=${this.groups}`;
  }
}
