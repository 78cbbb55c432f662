// The QAT form of a FloatFunctional in an eager-mode model: its methods run the float op, then the
// op's output goes through the instance's activation fake-quant (when the op takes an output scale of
// its own, as prepareQatFx's inserted fake-quants do). One instance serves one call site.
import type { FakeQuantize } from '@qtk/fake-quant';
import { FloatFunctional, Module } from '@qtk/nn';
import { InvalidArgumentError, opOfModule, type Tensor } from '@qtk/tensor';

/** FloatFunctional's op methods (add, mul, cat, ...): those the op catalog maps to an op. */
export const FLOAT_FUNCTIONAL_METHODS: readonly string[] = (() => {
  const probe: object = Object.create(FloatFunctional.prototype);
  return Object.getOwnPropertyNames(FloatFunctional.prototype).filter((name) => opOfModule(probe, name) !== null);
})();

type MethodCall = (...args: unknown[]) => Tensor;

export class QatFloatFunctional extends Module {
  readonly functional: FloatFunctional;
  readonly activationPostProcess: FakeQuantize | null;

  constructor(
    functional: FloatFunctional,
    activationPostProcess: FakeQuantize | null,
    /** Its path in the model, for messages. */
    readonly path: string,
  ) {
    super();
    this.functional = functional;
    this.activationPostProcess = activationPostProcess;
    this.training = functional.training;
  }

  forward(): never {
    throw new InvalidArgumentError(
      `'${this.path}' (FloatFunctional) is not meant to be called; use its methods (add, mul, cat, ...)`,
    );
  }

  /** Runs the float op, then the fake-quant when the op gives its output a scale of its own. */
  runMethod(method: string, args: readonly unknown[]): Tensor {
    const y = (this.functional as unknown as Record<string, MethodCall>)[method]!.apply(this.functional, [...args]);
    if (this.functional.callsInForward > 1)
      throw new InvalidArgumentError(
        `'${this.path}' (FloatFunctional) is called ${this.functional.callsInForward} times in one forward; in eager mode each ` +
          'FloatFunctional observes one output: give every call site its own FloatFunctional',
      );
    const fq = this.activationPostProcess;
    return fq && opOfModule(this.functional, method)?.ownOutputScale ? fq.call(y) : y;
  }

  override extraRepr(): string {
    return `${this.path}${this.activationPostProcess ? '' : ', no activation fake-quant'}`;
  }
}

/**
 * Gives `cls` FloatFunctional's op methods (add, mul, cat, ...), each calling `runMethod(name, args)`: the eager
 * stand-ins of a FloatFunctional (QAT, CPU, converted) are called as the FloatFunctional was.
 */
export function defineFloatFunctionalMethods(cls: {
  prototype: { runMethod(method: string, args: readonly unknown[]): unknown };
}): void {
  for (const method of FLOAT_FUNCTIONAL_METHODS) {
    Object.defineProperty(cls.prototype, method, {
      value: function (this: { runMethod(m: string, a: readonly unknown[]): unknown }, ...args: unknown[]) {
        return this.runMethod(method, args);
      },
      writable: true,
      configurable: true,
    });
  }
}

defineFloatFunctionalMethods(QatFloatFunctional);
