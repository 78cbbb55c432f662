import type { Node } from '@qtk/ir';
import type { ConvertedNode, ConvertNodeContext, QParams } from '@qtk/spec';
import { planSingleOperand, type AddPlan, type EwOperand, type ScalarOperand } from '../elementwise.js';
import { roundReal, sat } from '../integer-math.js';
import { FixedAdd } from '../modules/fixed-add.js';
import { FixedCat } from '../modules/fixed-cat.js';
import { FixedClamp } from '../modules/fixed-clamp.js';
import { FixedCompare, type CompareKind } from '../modules/fixed-compare.js';
import { FixedMinMax } from '../modules/fixed-min-max.js';
import { FixedMatMul } from '../modules/fixed-matmul.js';
import { FixedMul } from '../modules/fixed-mul.js';
import { FixedReduce } from '../modules/fixed-reduce.js';
import { isCall, isOp, type ConvertRule, type MarchEnv, unsupportedAt } from './march-converter.js';

type Env = MarchEnv & { readonly op: string | null };
type Slot = { kind: 'tensor'; q: QParams } | { kind: 'scalar'; c: number };

function failer(ctx: ConvertNodeContext, env: Env) {
  return (reason: string) => unsupportedAt(ctx, env.march, reason);
}

function isNode(a: unknown): a is Node {
  return !!a && typeof a === 'object' && 'users' in (a as object) && 'op' in (a as object);
}

/** The two operands of a binary node: per-tensor quantized values or number constants. */
function slotsOf(ctx: ConvertNodeContext, env: Env): [Slot, Slot] {
  const fail = failer(ctx, env);
  const slot = (a: unknown, which: string): Slot => {
    if (typeof a === 'number') return { kind: 'scalar', c: a };
    const q = isNode(a) ? ctx.qparamsOf(a) : null;
    if (!q) throw fail(`its ${which} operand is not a quantized tensor or a number`);
    if (q.scale.length !== 1)
      throw fail(`its ${which} operand has a per-channel scale; elementwise ops take per-tensor operands`);
    return { kind: 'tensor', q };
  };
  const [a, b] = ctx.node.args;
  const s: [Slot, Slot] = [slot(a, 'first'), slot(b, 'second')];
  if (s[0].kind === 'scalar' && s[1].kind === 'scalar') throw fail('both operands are numbers');
  return s;
}

function outOf(ctx: ConvertNodeContext, env: Env): QParams {
  const out = ctx.outputQparams;
  if (!out) throw failer(ctx, env)('it has no output fake-quant (prepare inserts one after each requantizing op)');
  if (out.scale.length !== 1) throw failer(ctx, env)('its output fake-quant is per channel');
  return out;
}

const operand = (s: Slot & { kind: 'tensor' }): EwOperand => ({ scale: Math.fround(s.q.scale[0]!), dtype: s.q.dtype });

/** Operands for an add-like plan: scalars become the march's one-element operand (null for c = 0). */
function addOperands(
  slots: [Slot, Slot],
  env: Env,
): { ops: [EwOperand | null, EwOperand | null]; scalars: [ScalarOperand | null, ScalarOperand | null] } {
  const other = (k: number) => (slots[1 - k] as Slot & { kind: 'tensor' }).q.dtype;
  const scalars = slots.map((s, k) =>
    s.kind === 'scalar' && s.c !== 0 ? env.numerics.scalarOperand(s.c, other(k)) : null,
  ) as [ScalarOperand | null, ScalarOperand | null];
  const ops = slots.map((s, k) =>
    s.kind === 'tensor' ? operand(s) : scalars[k] ? { scale: scalars[k]!.scale, dtype: scalars[k]!.dtype } : null,
  ) as [EwOperand | null, EwOperand | null];
  return { ops, scalars };
}

function addRule(sub: boolean): ConvertRule {
  return {
    name: sub ? 'sub' : 'add',
    ops: [sub ? 'Sub' : 'Add'],
    match: (ctx) => isOp(ctx, sub ? 'Sub' : 'Add'),
    build(ctx, env): ConvertedNode {
      const slots = slotsOf(ctx, env);
      const out = outOf(ctx, env);
      const sOut = Math.fround(out.scale[0]!);
      const { ops, scalars } = addOperands(slots, env);
      let plan: AddPlan;
      if (ops[0] && ops[1]) plan = env.numerics.planAdd(ops[0], ops[1], sub);
      else {
        // x ± 0 (or 0 - x): the tensor alone, requantized [choice]
        const k = ops[0] ? 0 : 1;
        plan = planSingleOperand(k, sub && k === 1 ? -1 : 1, ops[k]!.scale);
        scalars[1 - k] = { value: 0, scale: 1, dtype: 'qint8' };
      }
      const requant = env.numerics.requantize(plan.sAcc, sOut, out.dtype, ctx.warn);
      return {
        module: new FixedAdd({ sub, plan, requant, outScale: sOut, outDtype: out.dtype, scalars }),
        outputQparams: out,
      };
    },
  };
}

const mulRule: ConvertRule = {
  name: 'mul',
  ops: ['Mul'],
  match: (ctx) => isOp(ctx, 'Mul'),
  build(ctx, env) {
    const slots = slotsOf(ctx, env);
    const out = outOf(ctx, env);
    const sOut = Math.fround(out.scale[0]!);
    const { ops, scalars } = addOperands(slots, env);
    for (const k of [0, 1]) if (!ops[k]) scalars[k] = { value: 0, scale: 1, dtype: 'qint8' }; // x · 0
    const sAcc = ops[0] && ops[1] ? ops[0].scale * ops[1].scale : 1;
    const requant = env.numerics.requantize(sAcc, sOut, out.dtype, ctx.warn);
    return { module: new FixedMul({ requant, outScale: sOut, outDtype: out.dtype, scalars }), outputQparams: out };
  },
};

const matmulRule: ConvertRule = {
  name: 'matmul',
  ops: ['MatMul'],
  match: (ctx) => isOp(ctx, 'MatMul'),
  build(ctx, env) {
    const fail = failer(ctx, env);
    const slots = slotsOf(ctx, env);
    const scales = slots.map((s, k) => {
      if (s.kind !== 'tensor') throw fail(`its operand ${k} is a number (matmul multiplies two activations)`);
      return Math.fround(s.q.scale[0]!);
    });
    const out = outOf(ctx, env);
    const sOut = Math.fround(out.scale[0]!);
    const requant = env.numerics.requantize(scales[0]! * scales[1]!, sOut, out.dtype, ctx.warn);
    return { module: new FixedMatMul({ requant, outScale: sOut, outDtype: out.dtype }), outputQparams: out };
  },
};

const catRule: ConvertRule = {
  name: 'cat',
  ops: ['Concat'],
  match: (ctx) => isOp(ctx, 'Concat'),
  build(ctx, env) {
    const fail = failer(ctx, env);
    const list = ctx.node.args[0];
    if (!Array.isArray(list)) throw fail('its first argument is not a list of tensors');
    const out = outOf(ctx, env);
    const sOut = Math.fround(out.scale[0]!);
    const requants = list.map((a, k) => {
      const q = isNode(a) ? ctx.qparamsOf(a) : null;
      if (q?.scale.length !== 1) throw fail(`its input ${k} is not a per-tensor quantized tensor`);
      return env.numerics.requantize(Math.fround(q.scale[0]!), sOut, out.dtype, ctx.warn);
    });
    return { module: new FixedCat({ requants, outScale: sOut, outDtype: out.dtype }), outputQparams: out };
  },
};

/**
 * The reduced axes and keepdim of a reduce node: `mean(x, axes, keepdim)` as written, or, for an imported ONNX
 * reduce (whose arguments are laid out otherwise), as the catalog reports them (axes absent: every axis).
 */
function reduceArgs(ctx: ConvertNodeContext): { axes: unknown; keepdim: unknown; reordered: boolean } {
  const a = ctx.node.args;
  if ('keepdims' in ctx.attrs) return { axes: ctx.attrs.axes ?? null, keepdim: ctx.attrs.keepdims, reordered: true };
  return { axes: a[1], keepdim: a[2], reordered: false };
}

function reduceRule(kind: 'mean' | 'sum'): ConvertRule {
  return {
    name: kind,
    ops: [kind === 'mean' ? 'ReduceMean' : 'ReduceSum'],
    match: (ctx) => isOp(ctx, kind === 'mean' ? 'ReduceMean' : 'ReduceSum'),
    attrs: (ctx) => {
      const { axes } = reduceArgs(ctx);
      return axes === undefined || axes === null ? {} : { axes };
    },
    build(ctx, env) {
      const out = outOf(ctx, env);
      const { axes, keepdim, reordered } = reduceArgs(ctx);
      return {
        module: new FixedReduce(kind, out.scale[0]!, out.dtype, env.numerics.requantize),
        outputQparams: out,
        // FixedReduce takes (x, axes, keepdim)
        ...(reordered ? { args: [ctx.node.args[0], axes, Boolean(keepdim)] } : {}),
      };
    },
  };
}

function minMaxRule(kind: 'maximum' | 'minimum'): ConvertRule {
  return {
    name: kind,
    ops: [kind === 'maximum' ? 'Max' : 'Min'],
    match: (ctx) => isOp(ctx, kind === 'maximum' ? 'Max' : 'Min'),
    build(ctx, env) {
      const slots = slotsOf(ctx, env);
      const out = outOf(ctx, env);
      const sOut = Math.fround(out.scale[0]!);
      // a scalar goes straight onto the output grid
      const scalars = slots.map((s) =>
        s.kind === 'scalar'
          ? { value: sat(roundReal(s.c / sOut, ctx.rounding), out.dtype), scale: sOut, dtype: out.dtype }
          : null,
      ) as [ScalarOperand | null, ScalarOperand | null];
      const requants = slots.map((s) =>
        env.numerics.requantize(s.kind === 'tensor' ? Math.fround(s.q.scale[0]!) : sOut, sOut, out.dtype, ctx.warn),
      ) as [never, never];
      return {
        module: new FixedMinMax({ kind, requants, outScale: sOut, outDtype: out.dtype, scalars }),
        outputQparams: out,
      };
    },
  };
}

function clampRule(kind: 'clamp' | 'abs'): ConvertRule {
  return {
    name: kind,
    ops: [kind === 'clamp' ? 'Clip' : 'Abs'],
    match: (ctx) => isCall(ctx, kind),
    build(ctx, env) {
      const x = ctx.node.args[0];
      const q = isNode(x) ? ctx.qparamsOf(x) : null;
      if (q?.scale.length !== 1) throw failer(ctx, env)('its input is not a per-tensor quantized tensor');
      const out = ctx.outputQparams;
      const requant = out
        ? env.numerics.requantize(Math.fround(q.scale[0]!), Math.fround(out.scale[0]!), out.dtype, ctx.warn)
        : null;
      return {
        module: new FixedClamp(kind, ctx.rounding, requant, out ? Math.fround(out.scale[0]!) : null),
        outputQparams: out ?? q,
      };
    },
  };
}

const COMPARE_OPS: Record<Exclude<CompareKind, 'ne'>, string> = {
  eq: 'Equal',
  gt: 'Greater',
  lt: 'Less',
  ge: 'GreaterOrEqual',
  le: 'LessOrEqual',
};

function compareRule(kind: Exclude<CompareKind, 'ne'>): ConvertRule {
  return {
    name: kind,
    ops: [COMPARE_OPS[kind]],
    match: (ctx) => isOp(ctx, COMPARE_OPS[kind]),
    build(ctx, env) {
      const slots = slotsOf(ctx, env);
      const { ops, scalars } = addOperands(slots, env);
      if (!ops[0] || !ops[1]) {
        // a comparison with 0: the sign of the tensor itself
        const k = ops[0] ? 0 : 1;
        scalars[1 - k] = { value: 0, scale: 1, dtype: 'qint8' };
        const plan = planSingleOperand(k, k === 0 ? 1 : -1, ops[k]!.scale);
        return { module: new FixedCompare({ kind, plan, scalars }), outputQparams: null };
      }
      return {
        module: new FixedCompare({ kind, plan: env.numerics.planAdd(ops[0], ops[1], true), scalars }),
        outputQparams: null,
      };
    },
  };
}

/** Elementwise ops (march-semantics.md §1); a march whose table lacks one rejects it there. */
export const ELEMENTWISE_RULES: readonly ConvertRule[] = [
  addRule(false),
  addRule(true),
  mulRule,
  matmulRule,
  catRule,
  reduceRule('mean'),
  reduceRule('sum'),
  minMaxRule('maximum'),
  minMaxRule('minimum'),
  clampRule('clamp'),
  clampRule('abs'),
  compareRule('eq'),
  compareRule('gt'),
  compareRule('lt'),
  compareRule('ge'),
  compareRule('le'),
];
