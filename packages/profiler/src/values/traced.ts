// The traced graph of whatever a tool is given: a GraphModule as it is, a Module traced.
import { GraphModule, symbolicTrace } from '@qtk/ir';
import { Module } from '@qtk/nn';
import { InvalidArgumentError } from '@qtk/tensor';

export function tracedGraphOf(model: Module, tool: string): GraphModule {
  if (model instanceof GraphModule) return model;
  if (model instanceof Module) return symbolicTrace(model);
  throw new InvalidArgumentError(
    `${tool}: expected a Module or GraphModule, got ${model === null ? 'null' : typeof model}; pass the model itself`,
  );
}
