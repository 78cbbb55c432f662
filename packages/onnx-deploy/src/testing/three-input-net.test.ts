import { DeQuantStub } from '@qtk/nn';
import { Tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { ThreeInputNet } from './three-input-net.js';

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
