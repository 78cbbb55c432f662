import type { Node } from '@qtk/ir';
import { FloatFunctional, type Module } from '@qtk/nn';
import {
  checkOpSupport,
  UnsupportedOpError,
  type CapabilityTable,
  type ConvertedNode,
  type ConvertNodeContext,
  type NodeSupport,
  type NodeSupportContext,
  type NodeSupportReason,
  type QParams,
  type QuantDType,
} from '@qtk/spec';
import type { RequantizePlan, Warn } from '../requantize.js';
import type { AddPlanner, ScalarOperandRule } from '../elementwise.js';
import { checkTableOptionsFit } from './table-options.js';
import { compositeOps, compositeOpsOf } from '../composites/composite-ops.js';
import type { RoundingMode } from '@qtk/tensor';

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
  /**
   * Whether the rule converts this node. `match`, `attrs` and `refuse` must not read qparams, the
   * weight or the output scale: the hybrid partition asks them before calibration (supportsNode).
   */
  match(ctx: ConvertNodeContext): boolean;
  /** Attributes checked against the op's constraints (names as in the table). */
  attrs?(ctx: ConvertNodeContext): Record<string, unknown>;
  /** Why the march cannot run this node although the table lists the op (e.g. a fusion the op does not take); null when it can. */
  refuse?(ctx: ConvertNodeContext, env: MarchEnv & { readonly op: string }): string | null;
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

/** The rule a march's converter takes for a node and the table op it converts it as, or why it cannot. */
export type RuleVerdict =
  | { readonly ok: true; readonly rule: ConvertRule; readonly op: string | null }
  | {
      readonly ok: false;
      readonly rule: ConvertRule | null;
      /** The table op the refusal is about (the rule's first choice), null without a rule. */
      readonly op: string | null;
      readonly reason: NodeSupportReason;
      readonly detail: string;
    };

/**
 * The one decision of whether a march converts a node (convertNode and supportsNode both ask it):
 * the rule (a composite op's when the table runs it as one, else the first matching rule), then the
 * first of its ops the table lists with this dtype and these attributes that the rule does not refuse.
 */
export function ruleVerdict(
  ctx: ConvertNodeContext,
  env: MarchEnv,
  rules: readonly ConvertRule[],
  dtype: QuantDType | undefined,
): RuleVerdict {
  const rule = ruleFor(ctx, env.table, rules);
  if (!rule) {
    const listed = ctx.op !== null && env.table.ops.some((o) => o.op === ctx.op);
    return ctx.op !== null && !listed
      ? {
          ok: false,
          rule: null,
          op: null,
          reason: 'op not in table',
          detail: `op '${ctx.op}' is not in the capability table`,
        }
      : {
          ok: false,
          rule: null,
          op: null,
          reason: 'no conversion rule',
          detail: 'the march has no conversion rule for it',
        };
  }
  if (rule.ops.length === 0) return { ok: true, rule, op: null };
  const attrs = rule.attrs?.(ctx) ?? {};
  type Refusal = { op: string; reason: NodeSupportReason; detail: string };
  let refusal: Refusal | null = null;
  for (const op of rule.ops) {
    const listed = env.table.ops.some((o) => o.op === op);
    const typed = listed && checkOpSupport(env.table, { op, ...(dtype ? { dtype } : {}) });
    const s = checkOpSupport(env.table, { op, ...(dtype ? { dtype } : {}), attrs });
    const refused = s.ok ? (rule.refuse?.(ctx, { ...env, op }) ?? null) : null;
    if (s.ok && refused === null) return { ok: true, rule, op };
    const r: Refusal = !listed
      ? { op, reason: 'op not in table', detail: s.ok ? '' : s.reason }
      : typed && !typed.ok
        ? { op, reason: 'dtype', detail: typed.reason }
        : { op, reason: 'attribute constraint', detail: refused ?? (s.ok ? '' : s.reason) };
    // the first op's refusal, unless it is only absent from the table and a later op the table lists says more
    if (!refusal || (refusal.reason === 'op not in table' && r.reason !== 'op not in table')) refusal = r;
  }
  return { ok: false, rule, ...refusal! };
}

/**
 * A march's convertNode hook from its table, numerics and rules: the rule ruleVerdict picks builds
 * the node; a matching rule whose ops the table rejects (dtype, attributes) raises UnsupportedOpError
 * with the table's reason.
 */
export function createMarchConverter(
  env: MarchEnv,
  rules: readonly ConvertRule[],
): (ctx: ConvertNodeContext) => ConvertedNode | undefined {
  return (ctx) => {
    const v = ruleVerdict(ctx, env, rules, dtypeOf(ctx));
    if (!v.rule) return undefined;
    checkTableOptionsFit(ctx, v.rule.name, v.rule.tables);
    if (!v.ok)
      throw new UnsupportedOpError({
        op: `${opNameOf(ctx)} (${v.rule.ops.join(' / ')})`,
        node: ctx.node.name,
        march: env.march,
        reason: v.detail,
      });
    return v.rule.build(ctx, { ...env, op: v.op });
  };
}

/** No qparams before calibration: the context a rule's match / attrs / refuse see when supportsNode asks. */
function supportContext(ctx: NodeSupportContext, env: MarchEnv): ConvertNodeContext {
  return {
    march: ctx.march,
    node: ctx.node,
    module: ctx.module,
    op: ctx.op,
    attrs: ctx.attrs,
    fused: ctx.fused,
    weight: null,
    qparamsOf: () => null,
    outputQparams: null,
    rounding: env.table.rounding,
    warn: () => {},
  };
}

/** A march's supportsNode hook: the verdict createMarchConverter's convertNode acts on, for the same table and rules. */
export function createMarchSupport(
  env: MarchEnv,
  rules: readonly ConvertRule[],
): (ctx: NodeSupportContext) => NodeSupport {
  return (ctx) => {
    const v = ruleVerdict(supportContext(ctx, env), env, rules, ctx.dtype ?? undefined);
    if (v.ok) return { ok: true };
    // the table's words name the op; a refusal of a listed op says which op it is about
    const named = v.op === null || v.reason === 'op not in table' ? v.detail : `${v.op}: ${v.detail}`;
    return { ok: false, reason: v.reason, detail: named };
  };
}
