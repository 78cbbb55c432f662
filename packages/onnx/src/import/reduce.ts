// ONNX's reductions. ReduceSum takes its axes as an input from opset 13, the others from opset 18 (an attribute
// before). Sum, mean, max and min are one onnx.reduce node each; L1, L2, SumSquare, LogSum and LogSumExp are
// built from those and elementwise ops, so they export and convert as their parts.
import { abs, add, exp, log, mul, sqrt, sub } from '@qtk/tensor';
import type { NodeContext, Val } from './context.js';
import type { Handler } from './layers.js';
import { axesOf } from './tensor.js';
import { onnxReduce, onnxSqueeze } from './functions.js';

type Kind = 'sum' | 'mean' | 'max' | 'min';

interface Reduction {
  /** The reduced axes (null: all of them), and whether they stay as size 1. */
  axes: number[] | null;
  keep: boolean;
}

/** The node's axes and keepdims; null when noop_with_empty_axes makes it the identity. */
function reduction(ctx: NodeContext): Reduction | null {
  const axes = axesOf(ctx, ctx.opType === 'ReduceSum' ? 13 : 18);
  if ((!axes || axes.length === 0) && ctx.int('noop_with_empty_axes', 0) === 1) return null;
  return { axes: axes && axes.length > 0 ? axes : null, keep: ctx.int('keepdims', 1) === 1 };
}

function reduce(ctx: NodeContext, x: Val, kind: Kind, r: Reduction, suffix = ''): Val {
  return ctx.fn(onnxReduce, [x, kind, r.axes, r.keep], suffix);
}

const simple =
  (kind: Kind): Handler =>
  (ctx) => {
    const r = reduction(ctx);
    return [r ? reduce(ctx, ctx.input(0), kind, r) : ctx.input(0)];
  };

/** A reduction `after(sum(before(x)))`: L1 = sum |x|, L2 = √Σx², SumSquare = Σx², LogSum = log Σx. */
const composed =
  (before: ((ctx: NodeContext, x: Val) => Val) | null, after: ((ctx: NodeContext, s: Val) => Val) | null): Handler =>
  (ctx) => {
    const r = reduction(ctx);
    if (!r) return [ctx.input(0)];
    const x = before ? before(ctx, ctx.input(0)) : ctx.input(0);
    const s = reduce(ctx, x, 'sum', r, after ? '_sum' : '');
    return [after ? after(ctx, s) : s];
  };

const square = (ctx: NodeContext, x: Val) => ctx.fn(mul, [x, x], '_square');

/** log Σ exp(x), as max + log Σ exp(x − max) so that large x do not overflow. */
const logSumExp: Handler = (ctx) => {
  const r = reduction(ctx);
  if (!r) return [ctx.input(0)];
  const x = ctx.input(0);
  const m = reduce(ctx, x, 'max', { axes: r.axes, keep: true }, '_max');
  const e = ctx.fn(exp, [ctx.fn(sub, [x, m], '_shifted')], '_exp');
  const ls = ctx.fn(log, [reduce(ctx, e, 'sum', { axes: r.axes, keep: true }, '_sum')], '_log');
  const y = ctx.fn(add, [ls, m], r.keep ? '' : '_kept');
  if (r.keep) return [y];
  const rank = ctx.ex(0).ndim;
  return [ctx.fn(onnxSqueeze, [y, r.axes ?? Array.from({ length: rank }, (_, i) => i)])];
};

export const reduceHandlers: Record<string, Handler> = {
  ReduceSum: simple('sum'),
  ReduceMean: simple('mean'),
  ReduceMax: simple('max'),
  ReduceMin: simple('min'),
  ReduceL1: composed((ctx, x) => ctx.fn(abs, [x], '_abs'), null),
  ReduceL2: composed(square, (ctx, s) => ctx.fn(sqrt, [s])),
  ReduceSumSquare: composed(square, null),
  ReduceLogSum: composed(null, (ctx, s) => ctx.fn(log, [s])),
  ReduceLogSumExp: logSumExp,
};
