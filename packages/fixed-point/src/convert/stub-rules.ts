import { DeQuantStub, Identity, QuantStub } from '@qtk/nn';
import { type ConvertedNode, type ConvertNodeContext, type QParams, UnsupportedOpError } from '@qtk/spec';
import { FixedValueOp } from '../modules/fixed-value-op.js';
import { Dequantize, Quantize } from '../modules/quantize.js';
import { isModule, quantizedArgs, type ConvertRule, type MarchEnv } from './march-converter.js';

/**
 * A QuantStub inside the quantized region (segmented deployment: the stub marks where a later
 * segment starts): its input is already integers, so it requantizes them to the stub's own scale
 * and dtype with the march's rule (s_acc = s_in), or passes them through when both agree. An
 * identity FixedValueOp carries it, so it saves, loads and exports like any value op.
 */
function requantizingStub(ctx: ConvertNodeContext, env: MarchEnv, input: QParams, out: QParams): ConvertedNode {
  const unsupported = (reason: string) =>
    new UnsupportedOpError({ op: 'QuantStub', node: ctx.node.name, march: env.march, reason });
  if (input.scale.length !== 1)
    throw unsupported(
      'its input is quantized per channel; a QuantStub in the middle of a model requantizes per-tensor values only (place it after a per-tensor activation)',
    );
  if (input.dtype === 'qint32')
    throw unsupported(
      'its input is a high-precision qint32 output; place the QuantStub after an int8/int16 activation instead',
    );
  const s = Math.fround(out.scale[0]!);
  const same = out.dtype === input.dtype && s === Math.fround(input.scale[0]!);
  const output = same
    ? null
    : { scale: s, dtype: out.dtype, plan: env.numerics.requantize(input.scale[0]!, s, out.dtype, ctx.warn) };
  return {
    module: new FixedValueOp({ kind: 'module', module: new Identity() }, 'quant_stub_requantize', output),
    outputQparams: same ? input : out,
  };
}

/**
 * QuantStub → Quantize with the stub's (fixed or observed) scale; a stub whose input is already
 * quantized requantizes it instead (requantizingStub).
 */
export const quantStubRule: ConvertRule = {
  name: 'quant-stub',
  ops: [],
  match: (ctx) => isModule(ctx, QuantStub),
  build(ctx, env) {
    const q = ctx.outputQparams;
    if (!q) {
      throw new UnsupportedOpError({
        op: 'QuantStub',
        node: ctx.node.name,
        march: env.march,
        reason: 'it has no activation fake-quant; give it a qconfig with an activation',
      });
    }
    if (!env.table.activationDtypes.includes(q.dtype)) {
      throw new UnsupportedOpError({
        op: 'QuantStub',
        node: ctx.node.name,
        march: env.march,
        reason: `${q.dtype} is not an activation dtype of this march`,
      });
    }
    const input = quantizedArgs(ctx)[0]?.qparams;
    if (input) return requantizingStub(ctx, env, input, q);
    return { module: new Quantize(q, ctx.rounding), outputQparams: q };
  },
};

/** DeQuantStub → Dequantize (per tensor or per channel, e.g. after a high-precision output). */
export const dequantStubRule: ConvertRule = {
  name: 'dequant-stub',
  ops: [],
  match: (ctx) => isModule(ctx, DeQuantStub),
  build: () => ({ module: new Dequantize(), outputQparams: null }),
};
