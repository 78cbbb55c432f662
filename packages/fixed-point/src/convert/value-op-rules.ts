import type { Node } from '@qtk/ir';
import { deepCopy, ReLU6, Upsample } from '@qtk/nn';
import type { ConvertNodeContext, QParams } from '@qtk/spec';
import type { InterpolateOptions } from '@qtk/tensor';
import { intRange, roundReal } from '../integer-math.js';
import { FixedResize } from '../modules/fixed-resize.js';
import { FixedValueOp, type ValueOpOutput, type ValueOpTarget } from '../modules/fixed-value-op.js';
import {
  isCall,
  isModule,
  isOp,
  quantizedArgs,
  type ConvertRule,
  type MarchEnv,
  unsupportedAt,
} from './march-converter.js';

type Env = MarchEnv & { readonly op: string | null };

function targetOf(ctx: ConvertNodeContext): ValueOpTarget {
  const n: Node = ctx.node;
  if (n.op === 'call_module') return { kind: 'module', module: deepCopy(ctx.module!) };
  return n.op === 'call_method' ? { kind: 'method', name: n.target } : { kind: 'function', name: n.target };
}

function inputOf(ctx: ConvertNodeContext, env: Env): QParams {
  const q = quantizedArgs(ctx)[0]?.qparams;
  if (!q) throw unsupportedAt(ctx, env.march, 'it has no quantized input');
  return q;
}

/**
 * The output of a value op: the input's qparams pass through, unless the op has its own
 * activation fake-quant (prepare inserts one after e.g. `interpolate`), whose scale the moved
 * integers are requantized to with the march's rule (s_acc = s_in).
 */
function outputOf(
  ctx: ConvertNodeContext,
  env: Env,
  input: QParams,
): { qparams: QParams; output: ValueOpOutput | null } {
  const out = ctx.outputQparams;
  if (
    !out ||
    (out.dtype === input.dtype &&
      out.scale.length === input.scale.length &&
      out.scale.every((s, i) => Math.fround(s) === Math.fround(input.scale[i]!)))
  ) {
    return { qparams: input, output: null };
  }
  if (input.scale.length !== 1 || out.scale.length !== 1) {
    throw unsupportedAt(ctx, env.march, 'a per-channel input cannot be requantized by a data-movement op');
  }
  const plan = env.numerics.requantize(input.scale[0]!, out.scale[0]!, out.dtype, ctx.warn);
  return { qparams: out, output: { scale: out.scale[0]!, dtype: out.dtype, plan } };
}

/**
 * A value op: `ops` are the capability-table ops in order of preference, `catalogOps` the catalog
 * ops of the nodes it converts (modules, functions, methods and the importer's functions alike).
 */
function valueOpRule(
  name: string,
  ops: string[],
  catalogOps: string[],
  extra: {
    calls?: string[];
    attrs?: (ctx: ConvertNodeContext) => Record<string, unknown>;
    refuse?: ConvertRule['refuse'];
  } = {},
): ConvertRule {
  const calls = extra.calls ?? [];
  return {
    name,
    ops,
    match: (ctx) => isOp(ctx, ...catalogOps) || (calls.length > 0 && isCall(ctx, ...calls)),
    ...(extra.attrs ? { attrs: extra.attrs } : {}),
    ...(extra.refuse ? { refuse: extra.refuse } : {}),
    build(ctx, env) {
      const { qparams, output } = outputOf(ctx, env, inputOf(ctx, env));
      return { module: new FixedValueOp(targetOf(ctx), name, output), outputQparams: qparams };
    },
  };
}

/**
 * Standalone ReLU6 (docs/march-numerics.md, "Resize" → "ReLU6"): on the
 * integers `clamp(q, 0, min(qmax, R(6 / s)))` with s the output scale — the input's when the op
 * has no fake-quant of its own, else its own scale after requantizing. A clamp with two bounds is
 * the capability table's 'Clip'; a march without it may still have ReLU6 fused into a conv.
 */
const relu6Rule: ConvertRule = {
  name: 'relu6',
  ops: ['Clip'],
  match: (ctx) => isModule(ctx, ReLU6) || isCall(ctx, 'relu6'),
  build(ctx, env) {
    const { qparams, output } = outputOf(ctx, env, inputOf(ctx, env));
    if (qparams.scale.length !== 1) throw unsupportedAt(ctx, env.march, 'ReLU6 needs a per-tensor scale');
    const s = Math.fround(qparams.scale[0]!);
    const hi = Math.min(intRange(qparams.dtype).max, roundReal(6 / s, ctx.rounding));
    const clamped: ValueOpOutput = { scale: s, dtype: qparams.dtype, plan: output?.plan ?? null, clamp: [0, hi] };
    // the float relu6 would clamp the integers at 6: run relu, the clamp does the upper bound
    return { module: new FixedValueOp({ kind: 'function', name: 'relu' }, 'relu6', clamped), outputQparams: qparams };
  },
};

/**
 * The catalog's Pad: F.pad(x, pads, mode = 'constant', value = 0) and the imported ONNX Pad (DenseNet's Pad
 * before AveragePool), both (x, pads, mode, value): zeros only (a zero is 0 at every scale). The table
 * refuses ONNX's 'reflect' / 'edge' by its mode constraint.
 */
const padRule = valueOpRule('pad', ['Pad'], ['Pad'], {
  attrs: (ctx) => ({ mode: (ctx.node.args[2] as string | undefined) ?? 'constant' }),
  refuse(ctx) {
    const value = (ctx.node.args[3] as number | undefined) ?? 0;
    return value === 0 ? null : `it pads with the constant ${value}; only zero padding is value preserving`;
  },
});

function resizeOptionsOf(ctx: ConvertNodeContext): InterpolateOptions {
  if (ctx.module instanceof Upsample) {
    const m = ctx.module;
    return {
      ...(m.size !== undefined ? { size: m.size } : { scaleFactor: m.scaleFactor! }),
      mode: m.mode,
      ...(m.alignCorners !== undefined ? { alignCorners: m.alignCorners } : {}),
    };
  }
  return (ctx.node.args[1] as InterpolateOptions | undefined) ?? {};
}

/**
 * nn.Upsample and interpolate: nearest moves integers (a value op); bilinear is FixedResize
 * (8-bit weights, docs/march-numerics.md "Resize").
 */
const resizeRule: ConvertRule = {
  name: 'resize',
  ops: ['Resize'],
  match: (ctx) => isModule(ctx, Upsample) || isCall(ctx, 'interpolate'),
  attrs: (ctx) => ({ mode: resizeOptionsOf(ctx).mode ?? 'nearest' }),
  build(ctx, env) {
    const input = inputOf(ctx, env);
    const opts = resizeOptionsOf(ctx);
    if ((opts.mode ?? 'nearest') === 'nearest') {
      const { qparams, output } = outputOf(ctx, env, input);
      return { module: new FixedValueOp(targetOf(ctx), 'resize_nearest', output), outputQparams: qparams };
    }
    if (input.scale.length !== 1) throw unsupportedAt(ctx, env.march, 'bilinear resize needs a per-tensor scale');
    const { qparams, output } = outputOf(ctx, env, input);
    const plan = output ? env.numerics.requantize(input.scale[0]! / 65536, output.scale, output.dtype, ctx.warn) : null;
    const module = new FixedResize({
      options: ctx.module instanceof Upsample ? opts : null,
      output: output && plan ? { scale: output.scale, dtype: output.dtype, plan } : null,
      rounding: ctx.rounding,
    });
    return { module, outputQparams: qparams };
  },
};

/**
 * Ops that move or select integers without changing the scale (march-semantics.md §1), by their
 * op in the op catalog (nn modules, @qtk/tensor's functions and methods, the importer's functions). Reshape-like ops
 * (reshape, view, flatten, squeeze, unsqueeze, contiguous) keep the row-major order of the data,
 * so they are always "free" and map to 'Reshape'; transpose/permute move data ('Transpose').
 */
export const VALUE_OP_RULES: readonly ConvertRule[] = [
  valueOpRule('relu', ['Relu'], ['Relu']),
  relu6Rule,
  valueOpRule('max_pool2d', ['MaxPool'], ['MaxPool', 'GlobalMaxPool']),
  valueOpRule('flatten', ['Flatten', 'Reshape'], ['Flatten']),
  // contiguous copies without reshaping: no catalog op, converted like a reshape
  valueOpRule('reshape', ['Reshape'], ['Reshape', 'Squeeze', 'Unsqueeze'], { calls: ['contiguous'] }),
  valueOpRule('transpose', ['Transpose'], ['Transpose']),
  valueOpRule('pixel_shuffle', ['DepthToSpace'], ['DepthToSpace']),
  // a table without SpaceToDepth may run it as the reshape + transpose it is
  valueOpRule('pixel_unshuffle', ['SpaceToDepth', 'Transpose'], ['SpaceToDepth']),
  valueOpRule('channel_shuffle', ['ChannelShuffle'], ['ChannelShuffle']),
  valueOpRule('split', ['Split'], ['Split']),
  valueOpRule('slice', ['Slice'], ['Slice']),
  valueOpRule('gather', ['Gather'], ['Gather']),
  valueOpRule('expand', ['Expand'], ['Expand']),
  valueOpRule('tile', ['Tile'], ['Tile']),
  padRule,
  resizeRule,
  // an item of a list of quantized values (split's outputs): no table op, every march has it
  valueOpRule('getitem', [], [], { calls: ['getitem'] }),
];
