import type { Module } from '@qtk/nn';
import { traceable } from '@qtk/tensor';
import { GraphModule } from './graph-module.js';
import { Tracer, type TraceOptions } from './tracer.js';

/**
 * Records `root`'s forward into a GraphModule. Leaf modules (@qtk/nn's layers, QuantStub,
 * DeQuantStub, registered and `leafModules` classes) become call_module nodes, other modules are
 * traced through; registered functional ops become call_function nodes, tensor methods call_method
 * nodes, FloatFunctional ops call_module nodes with a method. See TraceOptions for concreteArgs.
 */
export function symbolicTrace(root: Module, options: TraceOptions = {}): GraphModule {
  const { graph, constants } = new Tracer(options).trace(root);
  return new GraphModule(root, graph, { constants });
}

/**
 * Registers `fn` under `name` so graphs can call it (call_function target `name`) and tracing
 * records calls to the returned function. Returns the wrapped function; use it in model code.
 */
// biome-ignore lint/suspicious/noExplicitAny: any[] parameters accept functions of every signature and still allow calling them (never[] would not)
export function registerTraceable<F extends (...args: any[]) => any>(
  name: string,
  fn: F,
  options: { impure?: boolean } = {},
): F {
  return traceable(name, fn, options);
}
