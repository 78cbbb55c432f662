// QuantStub → one op → DeQuantStub: one op's conversion or export, alone.
import { DeQuantStub, Module, QuantStub } from '@qtk/nn';
import type { Tensor } from '@qtk/tensor';
import { call } from './inputs.js';

/**
 * QuantStub → `op` → DeQuantStub. A module becomes the child `name` (default 'op', after quant and dequant), the
 * path a qconfig dict names; a function of the quantized input is called in forward (a function node when traced).
 */
export class SingleOpNet extends Module {
  readonly quant = new QuantStub();
  readonly dequant = new DeQuantStub();
  readonly fn: ((x: Tensor) => Tensor) | null;
  readonly opName: string;

  constructor(op: Module | ((x: Tensor) => Tensor), name = 'op') {
    super();
    this.fn = op instanceof Module ? null : op;
    this.opName = name;
    if (op instanceof Module) this.setChild(name, op);
  }

  forward(x: Tensor): Tensor {
    const q = this.quant.call(x);
    return this.dequant.call(this.fn ? this.fn(q) : call(this.getChild(this.opName)!, q));
  }
}
