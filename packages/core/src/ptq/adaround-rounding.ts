// AdaRound's soft rounding of one weight tensor (Nagel et al., 2020): per weight, with w/s = ⌊w/s⌋ + rest,
// h(V) = clamp(σ(V)·(ζ − γ) + γ, 0, 1) and w̃ = s · clamp(⌊w/s⌋ + h(V), qmin, qmax), V starting where h(V) = rest.
import type { FakeQuantize } from '@qtk/fake-quant';
import { Parameter } from '@qtk/nn';
import { Tensor } from '@qtk/tensor';

const ZETA = 1.1;
const GAMMA = -0.1;

/**
 * The learnt rounding of one weight: V per weight, the soft weights it gives during the optimisation and the hard
 * ones after. Forward and gradient are computed here in one pass over the weights (the autograd chain of a
 * sigmoid, two clamps and the regulariser cost more than the layer's own product).
 */
export class SoftRounding {
  readonly v: Parameter;
  private readonly step: Float32Array;
  private readonly base: Float32Array;
  private readonly h: Float32Array;
  /** dh/dV, and whether base + h lies inside the grid (where the weight follows h). */
  private readonly dh: Float32Array;
  private readonly inside: Uint8Array;

  constructor(
    private readonly weight: Tensor,
    fq: FakeQuantize,
  ) {
    const q = fq.calculateQparams();
    this.quantMin = q.quantMin;
    this.quantMax = q.quantMax;
    const n = weight.size;
    const per = n / q.scale.length;
    const w = weight.values();
    this.step = Float32Array.from({ length: n }, (_, i) => q.scale[Math.floor(i / per)]!);
    this.base = new Float32Array(n);
    const v0 = new Float32Array(n);
    for (let i = 0; i < n; i++) {
      const x = Math.fround(w[i]! / this.step[i]!);
      this.base[i] = Math.floor(x);
      // h(V) = rest at the start: σ(V) = (rest − γ) / (ζ − γ)
      const p = (x - this.base[i]! - GAMMA) / (ZETA - GAMMA);
      v0[i] = Math.log(p / (1 - p));
    }
    this.v = new Parameter(new Tensor({ data: v0, shape: [...weight.shape], dtype: 'float32' }));
    this.h = new Float32Array(n);
    this.dh = new Float32Array(n);
    this.inside = new Uint8Array(n);
  }

  private readonly quantMin: number;
  private readonly quantMax: number;

  private weightOf(h: ArrayLike<number>, i: number): number {
    return Math.fround(this.step[i]! * Math.min(this.quantMax, Math.max(this.quantMin, this.base[i]! + h[i]!)));
  }

  /** The soft weights of the current V: s · clamp(⌊w/s⌋ + h(V), qmin, qmax). */
  soft(): Tensor {
    const v = this.v.values();
    const out = new Float32Array(v.length);
    for (let i = 0; i < v.length; i++) {
      const sig = 1 / (1 + Math.exp(-v[i]!));
      const r = sig * (ZETA - GAMMA) + GAMMA;
      this.h[i] = Math.min(1, Math.max(0, r));
      this.dh[i] = r > 0 && r < 1 ? sig * (1 - sig) * (ZETA - GAMMA) : 0;
      const q = this.base[i]! + this.h[i]!;
      this.inside[i] = q >= this.quantMin && q <= this.quantMax ? 1 : 0;
      out[i] = this.weightOf(this.h, i);
    }
    return new Tensor({ data: out, shape: [...this.weight.shape], dtype: 'float32' });
  }

  /**
   * Sets V's gradient from the loss's gradient with respect to the soft weights of the last `soft()`, plus the
   * regulariser λ Σ (1 − |2h − 1|^β) when `beta` is given.
   */
  backward(gradWeight: ArrayLike<number>, beta: number | null, lambda: number): void {
    const n = this.h.length;
    const g = new Float32Array(n);
    for (let i = 0; i < n; i++) {
      let d = this.inside[i] ? gradWeight[i]! * this.step[i]! : 0;
      if (beta !== null) {
        const u = 2 * this.h[i]! - 1;
        d -= lambda * beta * Math.abs(u) ** (beta - 1) * Math.sign(u) * 2;
      }
      g[i] = d * this.dh[i]!;
    }
    this.v.grad = new Tensor({ data: g, shape: [...this.weight.shape], dtype: 'float32' });
  }

  /** The rounded weights: up where h(V) ≥ 1/2, down elsewhere. */
  hard(): Tensor {
    this.soft();
    const up = Float32Array.from(this.h, (h) => (h >= 0.5 ? 1 : 0));
    const out = Float32Array.from(up, (_, i) => this.weightOf(up, i));
    return new Tensor({ data: out, shape: [...this.weight.shape], dtype: 'float32' });
  }
}
