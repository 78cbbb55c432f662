// Conversion of the tabulated nonlinear ops (march-semantics.md §1): nodes matched by their op in
// the op catalog (nn modules, functions and tensor methods) → FixedTableOp. int8 in → a 256-entry table (wherever the table lists
// the op); int16 in → a segment table (only where the op's impl is 'segment_table').
import { ELU, GELU, LeakyReLU, PReLU, Softplus } from '@qtk/nn';
import { UnsupportedOpError, type ConvertNodeContext } from '@qtk/spec';
import { FixedTableOp } from '../modules/fixed-table-op.js';
import * as nl from '../nonlinear-functions.js';
import type { SegmentDividing } from '../segment-table.js';
import { isModule, isOp, opNameOf, quantizedArgs, type ConvertRule } from './march-converter.js';
import { planTunedTable } from './table-options.js';

/**
 * [choice] Dividing points per function: 'curvature' for the functions with a pole or an infinite
 * slope at 0 (reciprocal, sqrt, rsqrt, log, pow with a negative or fractional exponent), where even
 * points lose thousands of int16 steps; 'even' (the spec default) for the rest.
 * docs/march-numerics.md, "Tables in conversion".
 */
export function defaultDividing(fn: nl.NonlinearFunction): SegmentDividing {
  if (['reciprocal', 'sqrt', 'rsqrt', 'log'].includes(fn.name)) return 'curvature';
  const p = /^pow\((.*)\)$/.exec(fn.name);
  if (p) {
    const e = Number(p[1]);
    return e < 0 || !Number.isInteger(e) ? 'curvature' : 'even';
  }
  return 'even';
}

const num = (v: unknown, d: number): number => (typeof v === 'number' ? v : d);

/** The i-th argument after the input (call_function and call_method both put the input first). */
function argAfterInput(ctx: ConvertNodeContext, i: number): unknown {
  return ctx.node.args[i + 1];
}

interface TableOpSpec {
  readonly name: string;
  /** The op, in the capability table and the op catalog: the rule converts the nodes that are this op. */
  readonly op: string;
  /** Narrows the nodes converted, where only some implementations of the op compute this function. */
  readonly match?: (ctx: ConvertNodeContext) => boolean;
  /** The function(s) tabulated: one, or one per channel along axis 1; null when the node's form is not convertible. */
  fn(ctx: ConvertNodeContext): nl.NonlinearFunction | nl.NonlinearFunction[] | null;
}

const SPECS: readonly TableOpSpec[] = [
  { name: 'sigmoid', op: 'Sigmoid', fn: () => nl.sigmoid },
  { name: 'tanh', op: 'Tanh', fn: () => nl.tanh },
  { name: 'exp', op: 'Exp', fn: () => nl.exp },
  { name: 'erf', op: 'Erf', fn: () => nl.erf },
  { name: 'sin', op: 'Sin', fn: () => nl.sin },
  { name: 'cos', op: 'Cos', fn: () => nl.cos },
  { name: 'silu', op: 'Silu', fn: () => nl.silu },
  {
    name: 'gelu',
    op: 'Gelu',
    fn: (ctx) =>
      nl.gelu(
        ctx.module instanceof GELU
          ? ctx.module.approximate
          : ((argAfterInput(ctx, 0) as { approximate?: 'none' | 'tanh' } | undefined)?.approximate ?? 'none'),
      ),
  },
  { name: 'reciprocal', op: 'Reciprocal', fn: () => nl.reciprocal },
  { name: 'sqrt', op: 'Sqrt', fn: () => nl.sqrt },
  { name: 'rsqrt', op: 'Rsqrt', fn: () => nl.rsqrt },
  { name: 'log', op: 'Log', fn: () => nl.log },
  // pow with a constant number exponent only; a tensor exponent is an elementwise binary op
  {
    name: 'pow',
    op: 'Pow',
    fn: (ctx) => (typeof argAfterInput(ctx, 0) === 'number' ? nl.pow(argAfterInput(ctx, 0) as number) : null),
  },
  {
    name: 'softplus',
    op: 'Softplus',
    fn: (ctx) =>
      ctx.module instanceof Softplus
        ? nl.softplus(ctx.module.beta, ctx.module.threshold)
        : nl.softplus(num(argAfterInput(ctx, 0), 1), num(argAfterInput(ctx, 1), 20)),
  },
  {
    name: 'elu',
    op: 'Elu',
    fn: (ctx) => nl.elu(ctx.module instanceof ELU ? ctx.module.alpha : num(argAfterInput(ctx, 0), 1)),
  },
  {
    name: 'leaky_relu',
    op: 'LeakyRelu',
    fn: (ctx) =>
      nl.leakyRelu(ctx.module instanceof LeakyReLU ? ctx.module.negativeSlope : num(argAfterInput(ctx, 0), 0.01)),
  },
  {
    // [choice] PReLU's slope is a trained per-channel weight: one table per channel (axis 1), each a
    // leaky ReLU with that channel's slope. The functional prelu (weight a graph value) is not matched.
    name: 'prelu',
    op: 'PRelu',
    match: (ctx) => isModule(ctx, PReLU),
    fn: (ctx) => Array.from((ctx.module as PReLU).weight.values(), (s) => nl.leakyRelu(Math.fround(s))),
  },
  // PyTorch's function, or ONNX's with the alpha and beta the catalog reports for an imported HardSigmoid
  {
    name: 'hardsigmoid',
    op: 'HardSigmoid',
    fn: (ctx) =>
      ctx.attrs.alpha !== undefined || ctx.attrs.beta !== undefined
        ? nl.hardSigmoidAffine(num(ctx.attrs.alpha, 0.2), num(ctx.attrs.beta, 0.5))
        : nl.hardsigmoid,
  },
  { name: 'hardswish', op: 'HardSwish', fn: () => nl.hardswish },
];

function tableRule(spec: TableOpSpec): ConvertRule {
  return {
    name: `table:${spec.name}`,
    ops: [spec.op],
    tables: ['table'],
    match: (ctx) => (spec.match ? spec.match(ctx) : isOp(ctx, spec.op)) && spec.fn(ctx) !== null,
    build(ctx, env) {
      const fail = (reason: string) =>
        new UnsupportedOpError({ op: `${opNameOf(ctx)} (${env.op})`, node: ctx.node.name, march: env.march, reason });
      const input = quantizedArgs(ctx)[0];
      if (!input || input.node !== ctx.node.args[0]) throw fail('its input is not quantized');
      const inQ = input.qparams;
      if (inQ.scale.length !== 1) throw fail('its input has a per-channel scale');
      const out = ctx.outputQparams;
      if (!out) throw fail('it has no output fake-quant (a table needs an output scale)');
      const cap = env.table.ops.find((o) => o.op === env.op)!;
      if (inQ.dtype === 'qint16' && cap.impl !== 'segment_table')
        throw fail(
          `a qint16 input needs a segment table, and this march tabulates ${env.op} only for qint8 (impl '${cap.impl ?? 'unspecified'}')`,
        );
      if (inQ.dtype === 'qint8' && out.dtype !== 'qint8' && cap.impl !== 'segment_table')
        throw fail(`a qint8 table gives a qint8 output on this march, got ${out.dtype}`);
      const fns = spec.fn(ctx)!;
      const list = Array.isArray(fns) ? fns : [fns];
      const inSide = { s: inQ.scale[0]!, dt: inQ.dtype };
      const outSide = { s: out.scale[0]!, dt: out.dtype };
      const plans = list.map((f) => planTunedTable(ctx, null, f, inSide, outSide, defaultDividing(f)));
      for (const p of plans)
        if (p.kind === 'segment' && p.table.flags.multiplierSaturated)
          ctx.warn(
            `${spec.name}: a segment-table line is steeper than 32767 output steps per input step and saturates`,
          );
      const module = new FixedTableOp({
        label: spec.name,
        inDtype: inQ.dtype,
        inScale: inQ.scale[0]!,
        outScale: out.scale[0]!,
        outDtype: out.dtype,
        plans,
        channelAxis: 1,
      });
      return { module, outputQparams: out };
    },
  };
}

/** The tabulated nonlinear ops, one rule each. */
export const NONLINEAR_RULES: readonly ConvertRule[] = SPECS.map(tableRule);
