import type { Node } from '@qtk/ir';
import {
  ChannelShuffle,
  deepCopy,
  Flatten,
  MaxPool2d,
  PixelShuffle,
  PixelUnshuffle,
  ReLU,
  ReLU6,
  Upsample,
  type Module,
} from '@qtk/nn';
import { UnsupportedOpError, type ConvertNodeContext, type QParams } from '@qtk/spec';
import type { InterpolateOptions } from '@qtk/tensor';
import { intRange, roundReal } from '../integer-math.js';
import { FixedResize } from '../modules/fixed-resize.js';
import { FixedValueOp, type ValueOpOutput, type ValueOpTarget } from '../modules/fixed-value-op.js';
import { isCall, isModule, opNameOf, quantizedArgs, type ConvertRule, type MarchEnv } from './march-converter.js';

type Env = MarchEnv & { readonly op: string | null };
// biome-ignore lint/suspicious/noExplicitAny: a constructor type that accepts every subclass, whatever its constructor parameters
type Cls = abstract new (...a: any[]) => Module;

function targetOf(ctx: ConvertNodeContext): ValueOpTarget {
  const n: Node = ctx.node;
  if (n.op === 'call_module') return { kind: 'module', module: deepCopy(ctx.module!) };
  return n.op === 'call_method' ? { kind: 'method', name: n.target } : { kind: 'function', name: n.target };
}

function inputOf(ctx: ConvertNodeContext, env: Env): QParams {
  const q = quantizedArgs(ctx)[0]?.qparams;
  if (!q)
    throw new UnsupportedOpError({
      op: opNameOf(ctx),
      node: ctx.node.name,
      march: env.march,
      reason: 'it has no quantized input',
    });
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
    throw new UnsupportedOpError({
      op: opNameOf(ctx),
      node: ctx.node.name,
      march: env.march,
      reason: 'a per-channel input cannot be requantized by a data-movement op',
    });
  }
  const plan = env.numerics.requantize(input.scale[0]!, out.scale[0]!, out.dtype, ctx.warn);
  return { qparams: out, output: { scale: out.scale[0]!, dtype: out.dtype, plan } };
}

function valueOpRule(
  name: string,
  ops: string[],
  classes: Cls[],
  calls: string[],
  extra: {
    attrs?: (ctx: ConvertNodeContext) => Record<string, unknown>;
    check?: (ctx: ConvertNodeContext, env: Env) => void;
  } = {},
): ConvertRule {
  return {
    name,
    ops,
    match: (ctx) => (classes.length > 0 && isModule(ctx, ...classes)) || isCall(ctx, ...calls),
    ...(extra.attrs ? { attrs: extra.attrs } : {}),
    build(ctx, env) {
      extra.check?.(ctx, env);
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
    if (qparams.scale.length !== 1)
      throw new UnsupportedOpError({
        op: opNameOf(ctx),
        node: ctx.node.name,
        march: env.march,
        reason: 'ReLU6 needs a per-tensor scale',
      });
    const s = Math.fround(qparams.scale[0]!);
    const hi = Math.min(intRange(qparams.dtype).max, roundReal(6 / s, ctx.rounding));
    const clamped: ValueOpOutput = { scale: s, dtype: qparams.dtype, plan: output?.plan ?? null, clamp: [0, hi] };
    // the float relu6 would clamp the integers at 6: run relu, the clamp does the upper bound
    return { module: new FixedValueOp({ kind: 'function', name: 'relu' }, 'relu6', clamped), outputQparams: qparams };
  },
};

/** F.pad(x, pads, mode = 'constant', value = 0): zeros only (a zero is 0 at every scale). */
const padRule = valueOpRule('pad', ['Pad'], [], ['pad'], {
  attrs: (ctx) => ({ mode: (ctx.node.args[2] as string | undefined) ?? 'constant' }),
  check(ctx, env) {
    const value = (ctx.node.args[3] as number | undefined) ?? 0;
    if (value !== 0) {
      throw new UnsupportedOpError({
        op: opNameOf(ctx),
        node: ctx.node.name,
        march: env.march,
        reason: `it pads with the constant ${value}; only zero padding is value preserving`,
      });
    }
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
    if (input.scale.length !== 1)
      throw new UnsupportedOpError({
        op: opNameOf(ctx),
        node: ctx.node.name,
        march: env.march,
        reason: 'bilinear resize needs a per-tensor scale',
      });
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
 * Ops that move or select integers without changing the scale (march-semantics.md §1), by traced
 * name (functions in @qtk/tensor's traceable-ops, Tensor methods) and nn module. Reshape-like ops
 * (reshape, view, flatten, squeeze, unsqueeze, contiguous) keep the row-major order of the data,
 * so they are always "free" and map to 'Reshape'; transpose/permute move data ('Transpose').
 */
export const VALUE_OP_RULES: readonly ConvertRule[] = [
  valueOpRule('relu', ['Relu'], [ReLU], ['relu']),
  relu6Rule,
  valueOpRule('max_pool2d', ['MaxPool'], [MaxPool2d], ['maxPool2d', 'max_pool2d', 'onnx.globalMaxPool']),
  valueOpRule('flatten', ['Flatten', 'Reshape'], [Flatten], ['flatten', 'onnx.flatten']),
  // the onnx.* names are the functions importOnnx emits
  valueOpRule(
    'reshape',
    ['Reshape'],
    [],
    ['reshape', 'view', 'squeeze', 'unsqueeze', 'contiguous', 'onnx.reshape', 'onnx.squeeze', 'onnx.unsqueeze'],
  ),
  valueOpRule('transpose', ['Transpose'], [], ['transpose', 'permute', 'onnx.transpose']),
  valueOpRule('pixel_shuffle', ['DepthToSpace'], [PixelShuffle], []),
  // a table without SpaceToDepth may run it as the reshape + transpose it is
  valueOpRule('pixel_unshuffle', ['SpaceToDepth', 'Transpose'], [PixelUnshuffle], []),
  valueOpRule('channel_shuffle', ['ChannelShuffle'], [ChannelShuffle], []),
  valueOpRule('split', ['Split'], [], ['split']),
  valueOpRule('slice', ['Slice'], [], ['slice', 'onnx.slice']),
  valueOpRule('gather', ['Gather'], [], ['onnx.gather']),
  valueOpRule('expand', ['Expand'], [], ['expand']),
  padRule,
  resizeRule,
  // an item of a list of quantized values (split's outputs): no table op, every march has it
  valueOpRule('getitem', [], [], ['getitem']),
];
