import { crossEntropy, l1Loss, mseLoss, randn, type Tensor, tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { FloatFunctional } from './float-functional.js';
import { CrossEntropyLoss, L1Loss, MSELoss } from './loss.js';
import { Module } from './module.js';
import { DeQuantStub, QuantStub } from './quant-stub.js';

class TwoAdds extends Module {
  ff = new FloatFunctional();
  shared: boolean;
  other = new FloatFunctional();
  constructor(shared: boolean) {
    super();
    this.shared = shared;
  }
  forward(x: Tensor): Tensor {
    const y = this.ff.add(x, x);
    return this.shared ? this.ff.mulScalar(y, 2) : this.other.mulScalar(y, 2);
  }
}

describe('FloatFunctional', () => {
  it('computes the float ops', () => {
    const f = new FloatFunctional();
    const a = tensor([1, 2]);
    const b = tensor([3, 4]);
    expect(f.add(a, b).toArray()).toEqual([4, 6]);
    expect(f.sub(a, b).toArray()).toEqual([-2, -2]);
    expect(f.mul(a, b).toArray()).toEqual([3, 8]);
    expect(f.div(b, a).toArray()).toEqual([3, 2]);
    expect(f.addScalar(a, 0.5).toArray()).toEqual([1.5, 2.5]);
    expect(f.mulScalar(a, 3).toArray()).toEqual([3, 6]);
    expect(f.cat([a, b], 0).toArray()).toEqual([1, 2, 3, 4]);
    expect(f.matmul(tensor([[1, 2]]), tensor([[3], [4]])).toArray()).toEqual([11]);
    expect(f.sum(a).item()).toBe(3);
    expect(f.mean(b).item()).toBe(3.5);
    expect(f.opsUsed).toEqual(['add', 'sub', 'mul', 'div', 'addScalar', 'mulScalar', 'cat', 'matmul', 'sum', 'mean']);
    expect(() => (f as unknown as { call(): void }).call()).toThrow(/not meant to be called/);
  });

  it('counts uses per top-level forward, so a shared instance is detectable', () => {
    const ok = new TwoAdds(false);
    ok.call(tensor([1]));
    ok.call(tensor([1]));
    expect(ok.ff.callsInForward).toBe(1);
    expect(ok.ff.maxCallsPerForward).toBe(1);
    const bad = new TwoAdds(true);
    bad.call(tensor([1]));
    expect(bad.ff.callsInForward).toBe(2);
    bad.call(tensor([1]));
    expect(bad.ff.callsInForward).toBe(2);
    expect(bad.ff.maxCallsPerForward).toBe(2);
    expect(bad.namedModules().map(([n]) => n)).toEqual(['', 'ff', 'other']);
  });
});

describe('QuantStub / DeQuantStub', () => {
  it('are identities that keep an optional fixed scale', () => {
    const x = tensor([0.5, -1]);
    const q = new QuantStub({ scale: 1 / 128 });
    expect(q.call(x)).toBe(x);
    expect(q.scale).toBe(1 / 128);
    expect(new QuantStub().scale).toBeNull();
    expect(new DeQuantStub().call(x)).toBe(x);
    expect(() => new QuantStub({ scale: 0 })).toThrow(/QuantStub: invalid options: scale/);
  });
});

describe('loss modules', () => {
  it('match the functional forms', () => {
    const logits = randn([5, 4]);
    const target = tensor([0, 3, 1, 1, 2], { dtype: 'int32' });
    expect(new CrossEntropyLoss({ labelSmoothing: 0.1 }).call(logits, target).item()).toBe(
      crossEntropy(logits, target, { labelSmoothing: 0.1 }).item(),
    );
    expect(new CrossEntropyLoss({ reduction: 'none' }).call(logits, target).shape).toEqual([5]);
    const a = randn([3, 2]);
    const b = randn([3, 2]);
    expect(new MSELoss().call(a, b).item()).toBe(mseLoss(a, b).item());
    expect(new L1Loss({ reduction: 'sum' }).call(a, b).item()).toBe(l1Loss(a, b, 'sum').item());
    expect(() => new CrossEntropyLoss({ labelSmoothing: 2 })).toThrow(
      /CrossEntropyLoss: invalid options: labelSmoothing/,
    );
  });
});
