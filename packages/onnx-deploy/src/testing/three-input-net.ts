// The shape of the integer export's elementwise tests: three float inputs, each through its own QuantStub
// (qx, qy, qz), into the op under test; the subclass computes the outputs and dequantizes them.
import { Module, QuantStub } from '@qtk/nn';
import type { Tensor } from '@qtk/tensor';

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
