// A network of value-moving ops only, without parameters: quant → max pool 2 → relu → flatten → dequant. Its
// fixed-point form has no requantization, so its integers are the quantized input's.
import { DeQuantStub, Flatten, MaxPool2d, Module, QuantStub, ReLU } from '@qtk/nn';
import type { Tensor } from '@qtk/tensor';

export class PoolReluNet extends Module {
  readonly quant = new QuantStub();
  readonly pool = new MaxPool2d(2);
  readonly relu = new ReLU();
  readonly flatten = new Flatten({ startDim: 1 });
  readonly dequant = new DeQuantStub();
  forward(x: Tensor): Tensor {
    return this.dequant.call(this.flatten.call(this.relu.call(this.pool.call(this.quant.call(x)))));
  }
}
