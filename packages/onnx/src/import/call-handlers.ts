// Handlers for the ONNX ops that are one tensor function of their inputs, called as a call_function node
// (or folded when the inputs are constant).
import type { Tensor } from '@qtk/tensor';
import type { Handler } from './layers.js';
import { broadcastShape } from './limits.js';

/** `fn` of the node's first input. */
export const unary =
  (fn: (a: Tensor) => Tensor): Handler =>
  (ctx) => [ctx.fn(fn, [ctx.input(0)])];

/** `fn` of the node's two inputs, whose broadcast output shape is held to the import limits first. */
export const binary =
  (fn: (a: Tensor, b: Tensor) => Tensor): Handler =>
  (ctx) => {
    const out = broadcastShape(ctx.ex(0).shape, ctx.ex(1).shape);
    if (out) ctx.limit(out);
    return [ctx.fn(fn, [ctx.input(0), ctx.input(1)])];
  };
