// The shape of the integer export's elementwise tests: three float inputs, each through its own QuantStub
// (qx, qy, qz), into the op under test; the subclass computes the outputs and dequantizes them.
import type { GraphModule } from '@qtk/ir';
import { Module, QuantStub } from '@qtk/nn';
import type { Tensor } from '@qtk/tensor';
import type { ObserverDType } from '@qtk/spec';
import { onGrid, pairGrid, rangeInts } from './integer-inputs.js';

export abstract class ThreeInputNet extends Module {
  readonly qx = new QuantStub();
  readonly qy = new QuantStub();
  readonly qz = new QuantStub();

  forward(x: Tensor, y: Tensor, z: Tensor): Tensor | Tensor[] {
    return this.compute(this.qx.call(x), this.qy.call(y), this.qz.call(z));
  }

  /** The outputs, from the quantized x, y and z. */
  protected abstract compute(a: Tensor, b: Tensor, c: Tensor): Tensor | Tensor[];
}

/**
 * Inputs for a converted ThreeInputNet that quantize to chosen integers: every pair of `xs` and `ys` on a
 * [1, 1, xs.length, ys.length] grid through qx and qy, and `zs` as a [1, 1, 1, zs.length] row through qz.
 */
export function pairGridInputs(fixed: GraphModule, xs: Int32Array, ys: Int32Array, zs: Int32Array): Tensor[] {
  const { rows, cols } = pairGrid(xs, ys);
  const grid = [1, 1, xs.length, ys.length];
  return [
    onGrid(fixed, 'qx', rows, grid),
    onGrid(fixed, 'qy', cols, grid),
    onGrid(fixed, 'qz', zs, [1, 1, 1, zs.length]),
  ];
}

/** pairGridInputs of 256 integers spanning `dtype` for each of x, y (every int8 pair) and z (seeds 5, 6, 7). */
export const everyPairInputs = (fixed: GraphModule, dtype: ObserverDType): Tensor[] =>
  pairGridInputs(fixed, rangeInts(dtype, 256, 5), rangeInts(dtype, 256, 6), rangeInts(dtype, 256, 7));
