// Small models for fusion tests: one conv family followed by an optional BN, add and activation,
// written the way user code writes each variant (modules, F.*, tensor methods, FloatFunctional).
import * as nn from '@qtk/nn';
import { add, type Generator, randn, relu, relu6, type Tensor } from '@qtk/tensor';
import type { FusionFamily } from '../fusion-patterns.js';

export type AddKind = 'float_functional' | 'function' | 'method';
export type ReluKind = 'ReLU' | 'ReLU6' | 'relu' | 'relu6';
export type NormKind = 'BatchNorm1d' | 'BatchNorm2d' | 'BatchNorm3d' | 'SyncBatchNorm';

export interface ComboSpec {
  family: string;
  norm: NormKind | null;
  add: AddKind | null;
  order: 'first' | 'second';
  relu: ReluKind | null;
}

const NORMS: Record<NormKind, new (n: number) => nn.BatchNormNd> = {
  BatchNorm1d: nn.BatchNorm1d,
  BatchNorm2d: nn.BatchNorm2d,
  BatchNorm3d: nn.BatchNorm3d,
  SyncBatchNorm: nn.SyncBatchNorm,
};

/** Gives a BN non-trivial affine parameters and running statistics, so absorbing it matters. */
export function randomizeBatchNorm(bn: nn.BatchNormNd, g: Generator): void {
  const n = bn.numFeatures;
  const fill = (t: Tensor | null, v: Float32Array) => t?.values().set(v);
  fill(bn.runningMean, randn([n], { generator: g, std: 0.5 }).values() as Float32Array);
  fill(
    bn.runningVar,
    Float32Array.from(randn([n], { generator: g }).values(), (v) => 0.5 + Math.abs(v)),
  );
  fill(
    bn.weight,
    Float32Array.from(randn([n], { generator: g }).values(), (v) => 1 + 0.5 * v),
  );
  fill(bn.bias, randn([n], { generator: g, std: 0.5 }).values() as Float32Array);
}

export function makeLayer(family: string, g: Generator, options: { bias?: boolean; groups?: number } = {}): nn.Module {
  const groups = options.groups ?? 1;
  const bias = options.bias ?? true;
  switch (family) {
    case 'conv2d':
      return new nn.Conv2d(4, 6, 3, { padding: 1, groups, bias, generator: g });
    case 'conv_transpose2d':
      return new nn.ConvTranspose2d(4, 6, 3, { padding: 1, stride: 2, outputPadding: 1, groups, bias, generator: g });
    case 'conv3d':
      return new nn.Conv3d(4, 6, 3, { padding: 1, groups, bias, generator: g });
    case 'linear':
      return new nn.Linear(4, 6, { bias, generator: g });
    default:
      throw new Error(`unknown family ${family}`);
  }
}

/** Input and (add) other-input shapes for a family's test layer. */
export function shapesFor(family: string): { x: number[]; out: number[] } {
  switch (family) {
    case 'conv2d':
      return { x: [2, 4, 5, 5], out: [2, 6, 5, 5] };
    case 'conv_transpose2d':
      return { x: [2, 4, 3, 3], out: [2, 6, 6, 6] };
    case 'conv3d':
      return { x: [1, 4, 3, 3, 3], out: [1, 6, 3, 3, 3] };
    default:
      return { x: [3, 4], out: [3, 6] };
  }
}

export class ComboNet extends nn.Module {
  readonly layer: nn.Module;
  readonly bn: nn.BatchNormNd | null;
  readonly ff: nn.FloatFunctional | null;
  readonly act: nn.Module | null;

  constructor(
    readonly spec: ComboSpec,
    g: Generator,
  ) {
    super();
    this.layer = makeLayer(spec.family, g);
    this.bn = spec.norm ? new NORMS[spec.norm](6) : null;
    if (this.bn) randomizeBatchNorm(this.bn, g);
    this.ff = spec.add === 'float_functional' ? new nn.FloatFunctional() : null;
    this.act = spec.relu === 'ReLU' ? new nn.ReLU() : spec.relu === 'ReLU6' ? new nn.ReLU6() : null;
  }

  private addOp(a: Tensor, b: Tensor): Tensor {
    if (this.spec.add === 'float_functional') return this.ff!.add(a, b);
    if (this.spec.add === 'function') return add(a, b);
    return a.add(b);
  }

  forward(x: Tensor, other: Tensor): Tensor {
    let y = this.layer.call(x) as Tensor;
    if (this.bn) y = this.bn.call(y);
    if (this.spec.add) y = this.spec.order === 'first' ? this.addOp(y, other) : this.addOp(other, y);
    if (this.act) y = this.act.call(y) as Tensor;
    else if (this.spec.relu === 'relu') y = relu(y);
    else if (this.spec.relu === 'relu6') y = relu6(y);
    return y;
  }
}

export function comboInputs(family: string, g: Generator): [Tensor, Tensor] {
  const s = shapesFor(family);
  // scaled so relu6 clips some outputs
  return [randn(s.x, { generator: g, std: 3 }), randn(s.out, { generator: g, std: 3 })];
}

/** Every combination of the table for the given families: norms × adds × orders × activations per shape. */
export function allCombos(families: readonly FusionFamily[]): ComboSpec[] {
  const out: ComboSpec[] = [];
  const adds: (AddKind | null)[] = [null, 'float_functional', 'function', 'method'];
  const relus: (ReluKind | null)[] = [null, 'ReLU', 'ReLU6', 'relu', 'relu6'];
  for (const f of families) {
    const norms: (NormKind | null)[] = [null, ...f.norms.map((n) => n.name as NormKind)];
    for (const norm of norms) {
      for (const a of adds) {
        for (const order of a ? (['first', 'second'] as const) : (['first'] as const)) {
          for (const r of relus) {
            if (!norm && !a && !r) continue;
            out.push({ family: f.name, norm, add: a, order, relu: r });
          }
        }
      }
    }
  }
  return out;
}
