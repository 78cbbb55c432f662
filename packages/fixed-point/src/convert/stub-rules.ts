import { DeQuantStub, QuantStub } from '@qtk/nn';
import { UnsupportedOpError } from '@qtk/spec';
import { Dequantize, Quantize } from '../modules/quantize.js';
import { isModule, type ConvertRule } from './march-converter.js';

/** QuantStub → Quantize with the stub's (fixed or observed) scale. */
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
