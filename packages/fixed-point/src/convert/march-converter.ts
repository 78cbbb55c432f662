import type { Node } from '@qtk/ir';
import { FloatFunctional, type Module } from '@qtk/nn';
import {
  checkOpSupport,
  UnsupportedOpError,
  type CapabilityTable,
  type ConvertedNode,
  type ConvertNodeContext,
  type QParams,
  type QuantDType,
  type RoundingMode,
} from '@qtk/spec';
import type { RequantizePlan, Warn } from '../requantize.js';
import type { AddPlanner, ScalarOperandRule } from '../elementwise.js';
import { checkTableOptionsFit } from './table-options.js';
import { compositeOps, compositeOpsOf } from '../composites/composite-ops.js';

/** The integer rules where marches differ (march-semantics.md §0–§1); each march package supplies one. */
export interface MarchNumerics {
  /** Accumulator (scale s_acc, per channel or one) to an output at s_out. */
  requantize(sAcc: number | ArrayLike<number>, sOut: number, outDtype: QuantDType, warn?: Warn): RequantizePlan;
  /** The integer each output channel's accumulator gets for a float bias. */
  quantizeBias(bias: ArrayLike<number>, sAcc: ArrayLike<number>, rounding: RoundingMode): Int32Array;
  /** add / sub of two per-tensor operands (e.g. planAddShiftLarger, planAddConvSumin). */
  planAdd: AddPlanner;
  /** The one-element operand a scalar of add_scalar / mul_scalar becomes. */
  scalarOperand: ScalarOperandRule;
}

/** What a rule builds with: the march's id, capability table and numerics. */
export interface MarchEnv {
  readonly march: string;
  readonly table: CapabilityTable;
  readonly numerics: MarchNumerics;
}

/**
 * One QAT → fixed-point conversion rule. `ops` are capability-table op names in order of
 * preference: the rule uses the first the march's table lists (so a march without
 * 'AdaptiveAveragePool' can still take an adaptive pool as an 'AveragePool'); an empty list means
 * every march has it (quantize, dequantize).
 */
export interface ConvertRule {
  readonly name: string;
  readonly ops: readonly string[];
  /**
   * The lookup tables the rule builds, for the user's table options: ['table'] for one table,
   * part names for a composite (['exp', 'reciprocal']); absent when it builds none (table options
   * on such a node are an error).
   */
  readonly tables?: readonly string[];
  match(ctx: ConvertNodeContext): boolean;
  /** Attributes checked against the op's constraints (names as in the table). */
  attrs?(ctx: ConvertNodeContext): Record<string, unknown>;
  build(ctx: ConvertNodeContext, env: MarchEnv & { readonly op: string | null }): ConvertedNode;
}

/** The quantized inputs of a node, in argument order (arrays flattened). */
export function quantizedArgs(ctx: ConvertNodeContext): { node: Node; qparams: QParams }[] {
  const out: { node: Node; qparams: QParams }[] = [];
  const visit = (a: unknown): void => {
    if (Array.isArray(a)) a.forEach(visit);
    else if (a && typeof a === 'object' && 'users' in (a as object) && 'op' in (a as object)) {
      const q = ctx.qparamsOf(a as Node);
      if (q) out.push({ node: a as Node, qparams: q });
    }
  };
  ctx.node.args.forEach(visit);
  return out;
}

/** The dtype a node is checked with: its output's, else its first quantized input's. */
function dtypeOf(ctx: ConvertNodeContext): QuantDType | undefined {
  return ctx.outputQparams?.dtype ?? quantizedArgs(ctx)[0]?.qparams.dtype;
}

/** An UnsupportedOpError for the node of `ctx` on `march`, named by its module class or function. */
export function unsupportedAt(ctx: ConvertNodeContext, march: string, reason: string): UnsupportedOpError {
  return new UnsupportedOpError({ op: opNameOf(ctx), node: ctx.node.name, march, reason });
}

export function opNameOf(ctx: ConvertNodeContext): string {
  const m = ctx.module;
  if (m) return ctx.node.method ? `${m.constructor.name}.${ctx.node.method}` : m.constructor.name;
  return ctx.node.op === 'call_method' ? `Tensor.${ctx.node.target}` : ctx.node.target;
}

/**
 * Matches nodes whose op in the op catalog is one of `ops` (modules, functions, tensor methods and
 * FloatFunctional methods alike), not fused modules (those match by their layer in the conv rules).
 */
export function isOp(ctx: ConvertNodeContext, ...ops: string[]): boolean {
  return ctx.op !== null && ctx.fused === null && ops.includes(ctx.op);
}

/** Matches call_module nodes of these classes (instanceof), not FloatFunctional method calls. */
// biome-ignore lint/suspicious/noExplicitAny: a constructor type that accepts every subclass, whatever its constructor parameters
export function isModule(ctx: ConvertNodeContext, ...classes: (abstract new (...a: any[]) => Module)[]): boolean {
  return ctx.module !== null && ctx.node.method === undefined && classes.some((c) => ctx.module instanceof c);
}

/** Matches functional calls, tensor method calls and FloatFunctional methods named `names`. */
export function isCall(ctx: ConvertNodeContext, ...names: string[]): boolean {
  const n = ctx.node;
  if (n.op === 'call_function' || n.op === 'call_method') return names.includes(n.target);
  return ctx.module instanceof FloatFunctional && n.method !== undefined && names.includes(n.method);
}

/** The rule for a node: a composite op's when the table runs it as a composite, else the first matching rule. */
function ruleFor(
  ctx: ConvertNodeContext,
  table: CapabilityTable,
  rules: readonly ConvertRule[],
): ConvertRule | undefined {
  const matches = (r: ConvertRule | undefined): r is ConvertRule => r?.match(ctx) ?? false;
  return (
    compositeOpsOf(table)
      .map((c) => c.rule)
      .find(matches) ??
    rules.find(matches) ??
    // a composite op the table does not run as one: its rule reports the table's reason
    compositeOps
      .list()
      .map((c) => c.rule)
      .find(matches)
  );
}

/**
 * A march's convertNode hook from its table, numerics and rules: a composite op (compositeOps) the
 * table runs as a composite, else the first matching rule whose ops the table lists (with the node's
 * dtype and attributes) builds the node; a matching rule whose ops the table rejects raises
 * UnsupportedOpError with the table's reason.
 */
export function createMarchConverter(
  env: MarchEnv,
  rules: readonly ConvertRule[],
): (ctx: ConvertNodeContext) => ConvertedNode | undefined {
  return (ctx) => {
    const rule = ruleFor(ctx, env.table, rules);
    if (!rule) return undefined;
    checkTableOptionsFit(ctx, rule.name, rule.tables);
    if (rule.ops.length === 0) return rule.build(ctx, { ...env, op: null });
    const dtype = dtypeOf(ctx);
    const attrs = rule.attrs?.(ctx) ?? {};
    let reason = '';
    for (const op of rule.ops) {
      const s = checkOpSupport(env.table, { op, ...(dtype ? { dtype } : {}), attrs });
      if (s.ok) return rule.build(ctx, { ...env, op });
      reason ||= s.reason;
    }
    throw new UnsupportedOpError({
      op: `${opNameOf(ctx)} (${rule.ops.join(' / ')})`,
      node: ctx.node.name,
      march: env.march,
      reason,
    });
  };
}
