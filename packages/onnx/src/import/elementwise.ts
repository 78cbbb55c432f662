// ONNX elementwise, comparison, logical and broadcasting operators beyond the arithmetic of tensor.ts:
// the ops that PyTorch's exports of GELU, attention masks and class tokens use. All fold when their inputs
// are constant (shape subgraphs).
import {
  Tensor,
  add,
  ceil,
  cos,
  div,
  eq,
  erf,
  floor,
  ge,
  gt,
  le,
  logicalAnd,
  logicalNot,
  logicalOr,
  logicalXor,
  lt,
  maximum,
  minimum,
  round,
  sign,
  sin,
  where,
} from '@qtk/tensor';
import { Unsupported, type Val } from './context.js';
import { broadcastShape } from './limits.js';
import { onnxExpand, onnxInstanceNorm, onnxMod, onnxScatterND, onnxTile } from './array-functions.js';
import type { Handler } from './layers.js';
import { binary, unary } from './call-handlers.js';
import { checkComparison, fixedBatch, marked, type Comparison } from './shape-vectors.js';

/** A comparison, static on shape vectors where the batch cannot change its answer (shape-vectors.ts). */
const comparison =
  (op: Comparison, fn: (a: Tensor, b: Tensor) => Tensor): Handler =>
  (ctx) => {
    const [out] = binary(fn)(ctx) as [Val];
    return [checkComparison(ctx, op, ctx.input(0), ctx.input(1), out)];
  };

/** Max / Min / Sum / Mean of one or more inputs, broadcast, as a chain of binary ops. */
const variadic =
  (fn: (a: Tensor, b: Tensor) => Tensor, meanOf = false): Handler =>
  (ctx) => {
    const ins = (ctx.node.input ?? []).map((_, i) => ctx.input(i));
    let acc = ins[0]!;
    for (let i = 1; i < ins.length; i++) acc = ctx.fn(fn, [acc, ins[i]!], `_${i}`);
    if (meanOf && ins.length > 1) {
      const n: Val = {
        kind: 'const',
        t: new Tensor({ data: Float32Array.of(ins.length), shape: [], dtype: 'float32' }),
      };
      acc = ctx.fn(div, [acc, n], '_mean');
    }
    return [acc];
  };

/** Where on constant shape vectors keeps their dynamic-batch marks (a class token's Expand target). */
const whereOp: Handler = (ctx) => {
  const [c, a, b] = [ctx.input(0), ctx.input(1), ctx.input(2)];
  const out = ctx.fn(where, [c, a, b]);
  if (out.kind !== 'const' || c.kind !== 'const' || out.t.ndim !== 1) return [out];
  const cond = c.t.values();
  const pick = (v: Val, i: number): number | null =>
    v.kind === 'const'
      ? v.sym
        ? (v.sym[v.sym.length === 1 ? 0 : i] ?? null)
        : Number(v.t.values()[v.t.size === 1 ? 0 : i])
      : null;
  if (!(a.kind === 'const' && a.sym) && !(b.kind === 'const' && b.sym)) return [out];
  const sym = Array.from({ length: out.t.size }, (_, i) => pick(cond[cond.length === 1 ? 0 : i] ? a : b, i));
  return [marked(out, sym, [a, b])];
};

const expandOp: Handler = (ctx) => {
  const shape = ctx.constInts(1, 'shape')!;
  const xs = ctx.ex(0).shape;
  const out = broadcastShape(xs, shape);
  if (!out) throw new Unsupported(`input [${xs.join(', ')}] cannot broadcast with shape [${shape.join(', ')}]`);
  ctx.limit(out);
  const s = ctx.input(1);
  if (s.kind !== 'const' || !s.sym) return [ctx.fn(onnxExpand, [ctx.input(0), shape])];
  // a target computed from the batch (ViT's class_token.expand(n, -1, -1)): the batch is read at run time
  const entries = s.sym.flatMap((d, i) => (d === null ? [i] : []));
  const source = s.batch;
  if (!source || entries.some((i) => shape[i] !== source.size))
    return fixedBatch(ctx, 'expands to a shape computed from the batch', [ctx.fn(onnxExpand, [ctx.input(0), shape])]);
  const dyn: Val = { kind: 'dyn', node: source.node, ex: source.ex, dynBatch: true };
  return [ctx.fn(onnxExpand, [ctx.input(0), shape, dyn, source.axis, entries])];
};

const tileOp: Handler = (ctx) => {
  const repeats = ctx.constInts(1, 'repeats')!;
  const r = ctx.input(1);
  if (r.kind === 'const' && r.sym) fixedBatch(ctx, 'repeats a number of times computed from the batch', null);
  const xs = ctx.ex(0).shape;
  if (repeats.length !== xs.length || repeats.some((r) => !Number.isSafeInteger(r) || r < 0))
    throw new Unsupported(`repeats [${repeats.join(', ')}] must be ${xs.length} non-negative integers`);
  ctx.limit(xs.map((d, i) => d * repeats[i]!));
  return [ctx.fn(onnxTile, [ctx.input(0), repeats])];
};

/** Range on constant start / limit / delta folds to a constant; a range computed at run time has a data-dependent size. */
const rangeOp: Handler = (ctx) => {
  if (![0, 1, 2].every((i) => ctx.isConst(i)))
    throw new Unsupported('start, limit and delta must be constants: the output size would depend on the data');
  if ([0, 1, 2].some((i) => ctx.input(i).kind === 'const' && (ctx.input(i) as { sym?: unknown }).sym))
    fixedBatch(ctx, 'counts up to a number computed from the batch', null);
  const [start, limit, delta] = [0, 1, 2].map((i) => Number(ctx.ex(i).values()[0]));
  if (!delta || !Number.isFinite(start! + limit! + delta))
    throw new Unsupported(`delta must be a finite non-zero number, got start ${start}, limit ${limit}, delta ${delta}`);
  const n = Math.max(Math.ceil((limit! - start!) / delta), 0);
  ctx.limit([n]);
  const dtype = ctx.ex(0).dtype === 'float32' ? 'float32' : 'int32';
  const data = dtype === 'float32' ? new Float32Array(n) : new Int32Array(n);
  for (let i = 0; i < n; i++) data[i] = start! + i * delta;
  return [{ kind: 'const', t: new Tensor({ data, shape: [n], dtype }) }];
};

const instanceNormalization: Handler = (ctx) => {
  const x = ctx.ex(0);
  if (x.ndim < 3) throw new Unsupported(`the input must have spatial dims, got [${x.shape.join(', ')}]`);
  const c = x.shape[1]!;
  for (const i of [1, 2]) {
    if (ctx.ex(i).size !== c)
      throw new Unsupported(`input ${i} must hold one value per channel (${c}), got [${ctx.ex(i).shape.join(', ')}]`);
  }
  return [ctx.fn(onnxInstanceNorm, [ctx.input(0), ctx.input(1), ctx.input(2), ctx.float('epsilon', 1e-5)])];
};

const modOp: Handler = (ctx) => {
  const out = broadcastShape(ctx.ex(0).shape, ctx.ex(1).shape);
  if (out) ctx.limit(out);
  return [ctx.fn(onnxMod, [ctx.input(0), ctx.input(1), ctx.int('fmod', 0) === 1])];
};

const scatterND: Handler = (ctx) => {
  const reduction = ctx.str('reduction', 'none');
  const known = ['none', ...(ctx.opset >= 16 ? ['add', 'mul'] : []), ...(ctx.opset >= 18 ? ['max', 'min'] : [])];
  if (!known.includes(reduction))
    throw new Unsupported(
      `reduction '${reduction}' is not an opset-${ctx.opset} ScatterND reduction (${known.join(', ')})`,
    );
  const args = [ctx.input(0), ctx.input(1), ctx.input(2)];
  return [ctx.fn(onnxScatterND, reduction === 'none' ? args : [...args, reduction])];
};

function refuse(reason: string): Handler {
  return () => {
    throw new Unsupported(reason);
  };
}

export const elementwiseHandlers: Record<string, Handler> = {
  Erf: unary(erf),
  Sin: unary(sin),
  Cos: unary(cos),
  Floor: unary(floor),
  Ceil: unary(ceil),
  Round: unary(round),
  Sign: unary(sign),
  Not: unary(logicalNot),
  And: binary(logicalAnd),
  Or: binary(logicalOr),
  Xor: binary(logicalXor),
  Equal: comparison('Equal', eq),
  Less: comparison('Less', lt),
  LessOrEqual: comparison('LessOrEqual', le),
  Greater: comparison('Greater', gt),
  GreaterOrEqual: comparison('GreaterOrEqual', ge),
  Max: variadic(maximum),
  Min: variadic(minimum),
  Sum: variadic(add),
  Mean: variadic(add, true),
  Where: whereOp,
  Expand: expandOp,
  Tile: tileOp,
  Range: rangeOp,
  Mod: modOp,
  ScatterND: scatterND,
  InstanceNormalization: instanceNormalization,
  NonZero: refuse(
    "NonZero's output size depends on the input's values, and QTK imports graphs of static shapes; compute a mask with a comparison and Where instead",
  ),
};
