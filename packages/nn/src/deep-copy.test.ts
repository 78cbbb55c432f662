import { Generator, randn, type Tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { COPY_FIELDS, deepCopy } from './deep-copy.js';
import { Module } from './module.js';
import { ReLU } from './layers/activation.js';
import { Sequential } from './layers/container.js';
import { Conv2d } from './layers/conv.js';
import { Linear } from './layers/linear.js';
import { BatchNorm2d } from './layers/normalization.js';

describe('deepCopy', () => {
  it('copies the tree, parameters and buffers; preserves sharing; the copy is independent', () => {
    const g = new Generator(0);
    const shared = new Linear(2, 2, { generator: g });
    const net = new Sequential(new Conv2d(1, 2, 3, { generator: g }), new BatchNorm2d(2), new ReLU(), shared, shared);
    net.registerForwardHook(() => undefined);
    const copy = deepCopy(net);
    expect(copy).toBeInstanceOf(Sequential);
    expect(copy.namedParameters().map(([n]) => n)).toEqual(net.namedParameters().map(([n]) => n));
    expect(copy.at(3)).toBe(copy.at(4));
    expect(copy.at(3)).not.toBe(shared);
    const sd = copy.stateDict();
    for (const [k, t] of Object.entries(net.stateDict().tensors)) {
      expect(sd.tensors[k]!.toArray()).toEqual(t.toArray());
      expect(sd.tensors[k]!.data).not.toBe(t.data);
    }
    const x = randn([1, 1, 4, 4], { generator: g });
    net.eval();
    copy.eval();
    expect(copy.call(x).toArray()).toEqual(net.call(x).toArray());
    (copy.at(0) as Conv2d).weight.data[0] = 99;
    expect((net.at(0) as Conv2d).weight.data[0]).not.toBe(99);
    copy.train();
    copy.at(1).call(randn([2, 2, 2, 2]));
    expect((net.at(1) as BatchNorm2d).numBatchesTracked!.item()).toBe(0);
  });

  it("copies instances of classes marked COPY_FIELDS (a module's stateful helpers) and shares other class instances", () => {
    class Stats {
      count = new Float64Array(2);
      get [COPY_FIELDS](): boolean {
        return true;
      }
    }
    class Opaque {
      n = 1;
    }
    class Holder extends Module {
      readonly stats = new Stats();
      readonly opaque = new Opaque();
      forward(x: Tensor): Tensor {
        return x;
      }
    }
    const a = new Holder();
    a.stats.count[0] = 5;
    const b = deepCopy(a);
    expect(b.stats).toBeInstanceOf(Stats);
    expect(b.stats).not.toBe(a.stats);
    expect(Array.from(b.stats.count)).toEqual([5, 0]);
    b.stats.count[0] = 7;
    expect(a.stats.count[0]).toBe(5);
    expect(b.opaque).toBe(a.opaque);
  });
});
