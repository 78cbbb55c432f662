import { DeQuantStub, Module, QuantStub } from '@qtk/nn';
import type { Tensor } from '@qtk/tensor';

/** Calls a module (eager or traced) with tensor arguments. */
export const callModule = (m: Module, ...args: Tensor[]): Tensor =>
  (m as unknown as { call(...a: Tensor[]): Tensor }).call(...args);

/** The named child modules of a probe net. */
export type Parts = Readonly<Record<string, Module>>;

/** QuantStub → body over named child modules → DeQuantStub: one op on one quantized input. */
export class UnaryProbeNet extends Module {
  readonly quant = new QuantStub();
  readonly dequant = new DeQuantStub();
  constructor(
    private readonly parts: Parts,
    private readonly body: (parts: Parts, x: Tensor) => Tensor,
  ) {
    super();
    for (const [name, m] of Object.entries(parts)) this.registerModule(name, m);
  }
  forward(x: Tensor): Tensor {
    return this.dequant.call(this.body(this.parts, this.quant.call(x)));
  }
}

/** Two QuantStubs (each operand its own scale) → body → DeQuantStub: one op on two quantized inputs. */
export class BinaryProbeNet extends Module {
  readonly qa = new QuantStub();
  readonly qb = new QuantStub();
  readonly dequant = new DeQuantStub();
  constructor(private readonly body: (a: Tensor, b: Tensor) => Tensor) {
    super();
  }
  forward(a: Tensor, b: Tensor): Tensor {
    return this.dequant.call(this.body(this.qa.call(a), this.qb.call(b)));
  }
}
