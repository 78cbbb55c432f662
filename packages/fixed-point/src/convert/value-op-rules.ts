import type { Node } from '@qtk/ir';
import { deepCopy, Flatten, MaxPool2d, ReLU, type Module } from '@qtk/nn';
import { FixedValueOp } from '../modules/fixed-value-op.js';
import { isCall, isModule, quantizedArgs, type ConvertRule } from './march-converter.js';

function valueOpRule(name: string, ops: string[], classes: (abstract new (...a: any[]) => Module)[], calls: string[]): ConvertRule {
  return {
    name,
    ops,
    match: (ctx) => (classes.length > 0 && isModule(ctx, ...classes)) || isCall(ctx, ...calls),
    build(ctx) {
      const n: Node = ctx.node;
      const target =
        n.op === 'call_module'
          ? { kind: 'module' as const, module: deepCopy(ctx.module!) }
          : n.op === 'call_method'
            ? { kind: 'method' as const, name: n.target }
            : { kind: 'function' as const, name: n.target };
      const input = quantizedArgs(ctx)[0]!.qparams;
      return { module: new FixedValueOp(target, name), outputQparams: input };
    },
  };
}

/** Ops that move or select integers without changing the scale (march-semantics.md §1). */
export const VALUE_OP_RULES: readonly ConvertRule[] = [
  valueOpRule('relu', ['Relu'], [ReLU], ['relu']),
  valueOpRule('max_pool2d', ['MaxPool'], [MaxPool2d], ['max_pool2d']),
  valueOpRule('flatten', ['Flatten', 'Reshape'], [Flatten], ['flatten']),
  valueOpRule('reshape', ['Reshape'], [], ['reshape', 'view']),
];
