import { Module } from '@qtk/nn';
import { ShapeError, tensor, Tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { registerLeafModule } from './leaf-modules.js';
import { symbolicTrace } from './symbolic-trace.js';

/** A leaf whose result is too large to allocate (as a module with huge settings from a file would). */
class Huge extends Module {
  forward(x: Tensor): Tensor {
    return new Tensor({ data: new Float32Array(x.size * 2 ** 40), shape: [x.size * 2 ** 40], dtype: 'float32' });
  }
}
registerLeafModule(Huge);

class Net extends Module {
  readonly huge = new Huge();
  forward(x: Tensor): Tensor {
    return this.huge.call(x) as Tensor;
  }
}

describe('running a GraphModule', () => {
  it('a result too large to allocate is a ShapeError naming the node, not a RangeError', () => {
    const gm = symbolicTrace(new Net());
    const run = () => gm.call(tensor([1, 2]));
    expect(run).toThrow(ShapeError);
    expect(run).toThrow(/graph node 'huge' \(call_module huge\): its result is too large to allocate/);
  });
});
