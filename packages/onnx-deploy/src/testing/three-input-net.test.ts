import { Quantize } from '@qtk/fixed-point';
import type { GraphModule } from '@qtk/ir';
import { DeQuantStub } from '@qtk/nn';
import { Tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { pairGridInputs, ThreeInputNet } from './three-input-net.js';

class SumAndLast extends ThreeInputNet {
  readonly dequant = new DeQuantStub();
  protected compute(a: Tensor, b: Tensor, c: Tensor): Tensor[] {
    return [this.dequant.call(a.add(b).mul(c)), c];
  }
}

const t = (...v: number[]) => new Tensor({ data: Float32Array.from(v), shape: [v.length], dtype: 'float32' });

describe('ThreeInputNet', () => {
  it('passes x, y, z through qx, qy, qz (identities in float) to compute, in that order', () => {
    const [sum, last] = new SumAndLast().call(t(1, 2), t(10, 20), t(3, -1)) as Tensor[];
    expect(Array.from(sum!.values())).toEqual([33, -22]);
    expect(Array.from(last!.values())).toEqual([3, -1]);
  });

  it("registers the stubs first, then the subclass's modules", () => {
    expect(new SumAndLast().namedChildren().map(([name]) => name)).toEqual(['qx', 'qy', 'qz', 'dequant']);
  });
});

describe('pairGridInputs', () => {
  it('puts every (x, y) pair on the grid through qx / qy and z on a row through qz, at each stub scale', () => {
    const stub = (scale: number) => new Quantize({ scale: Float32Array.of(scale), dtype: 'qint8' });
    const stubs = { qx: stub(0.5), qy: stub(0.25), qz: stub(2) };
    const fixed = { getSubmodule: (name: keyof typeof stubs) => stubs[name] } as unknown as GraphModule;
    const [x, y, z] = pairGridInputs(fixed, Int32Array.of(1, -2), Int32Array.of(3, 4, 5), Int32Array.of(7, -8));
    expect(x!.shape).toEqual([1, 1, 2, 3]);
    expect(Array.from(x!.values())).toEqual([0.5, 0.5, 0.5, -1, -1, -1]);
    expect(Array.from(y!.values())).toEqual([0.75, 1, 1.25, 0.75, 1, 1.25]);
    expect([z!.shape, Array.from(z!.values())]).toEqual([
      [1, 1, 1, 2],
      [14, -16],
    ]);
  });
});
