// A module left float in an eager-mode heterogeneous model: it runs on the CPU, and its output goes
// through an activation fake-quant, which gives the quantized modules after it a calibrated input
// scale (the converted model quantizes there). A FloatFunctional left float keeps its methods.
import type { FakeQuantize } from '@qtk/fake-quant';
import { Module } from '@qtk/nn';
import { InvalidArgumentError, Tensor } from '@qtk/tensor';
import { defineFloatFunctionalMethods } from './qat-float-functional.js';

type Callable = (...args: unknown[]) => unknown;

export class CpuModule extends Module {
  readonly module: Module;
  readonly activationPostProcess: FakeQuantize | null;

  constructor(
    module: Module,
    activationPostProcess: FakeQuantize | null,
    /** Its path in the model, for messages. */
    readonly path: string,
  ) {
    super();
    this.module = module;
    this.activationPostProcess = activationPostProcess;
    this.training = module.training;
  }

  forward(...args: unknown[]): unknown {
    return this.observed((this.module as unknown as { call: Callable }).call(...args));
  }

  /** Runs method `name` of the float module (a FloatFunctional's add, ...), its output observed. */
  runMethod(name: string, args: readonly unknown[]): unknown {
    const f = (this.module as unknown as Record<string, Callable | undefined>)[name];
    if (typeof f !== 'function')
      throw new InvalidArgumentError(`'${this.path}' (${this.module.constructor.name}) has no method ${name}`);
    return this.observed(f.apply(this.module, [...args]));
  }

  private observed(y: unknown): unknown {
    const fq = this.activationPostProcess;
    return fq && y instanceof Tensor ? fq.call(y) : y;
  }

  override extraRepr(): string {
    return `${this.path}: ${this.module.constructor.name} on the CPU${this.activationPostProcess ? ', output observed' : ''}`;
  }
}

defineFloatFunctionalMethods(CpuModule);
