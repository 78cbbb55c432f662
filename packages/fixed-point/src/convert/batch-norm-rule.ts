// A BatchNorm that follows no conv (after an add, a ConvTranspose + Add in a detection neck): in eval it
// is a per-channel affine y = a·x + b, converted as the depthwise 1×1 conv it is.
import { BatchNorm2d } from '@qtk/nn';
import { Tensor } from '@qtk/tensor';
import { FixedConv } from '../modules/fixed-conv.js';
import { isModule, type ConvertRule, quantizedArgs, unsupportedAt } from './march-converter.js';

/** a_c = γ / √(var + ε) and b_c = β − mean·a_c, in float64 from the layer's float32 values. */
function affineOf(m: BatchNorm2d): { a: Float64Array; b: Float64Array } {
  const c = m.numFeatures;
  const mean = m.runningMean!.values();
  const variance = m.runningVar!.values();
  const gamma = m.weight?.values();
  const beta = m.bias?.values();
  const a = new Float64Array(c);
  const b = new Float64Array(c);
  for (let i = 0; i < c; i++) {
    a[i] = (gamma ? gamma[i]! : 1) / Math.sqrt(variance[i]! + m.eps);
    b[i] = (beta ? beta[i]! : 0) - mean[i]! * a[i]!;
  }
  return { a, b };
}

/**
 * BatchNorm2d with running statistics, alone: the weight of each channel's 1×1 depthwise conv is ±127 at
 * the scale |a_c| / 127 (a_c exactly, up to float32 rounding of the scale), its bias b_c at the accumulator
 * scale, then the march's requantize to the BN's output scale. A march without a standalone
 * BatchNormalization runs it as a Conv.
 */
export const batchNormRule: ConvertRule = {
  name: 'batch_norm',
  ops: ['BatchNormalization', 'Conv'],
  match: (ctx) => isModule(ctx, BatchNorm2d) && ctx.fused === null,
  attrs: () => ({ spatialDims: 2 }),
  refuse: (ctx) =>
    (ctx.module as BatchNorm2d).runningMean === null
      ? 'it has no running statistics (trackRunningStats: false), so it is not a fixed affine in eval'
      : null,
  build(ctx, env) {
    const m = ctx.module as BatchNorm2d;
    const input = quantizedArgs(ctx)[0];
    if (input?.qparams.scale.length !== 1)
      throw unsupportedAt(ctx, env.march, 'its input is not a per-tensor quantized tensor');
    const out = ctx.outputQparams;
    if (!out) throw unsupportedAt(ctx, env.march, 'it has no output fake-quant');
    const { a, b } = affineOf(m);
    const c = m.numFeatures;
    const sx = Math.fround(input.qparams.scale[0]!);
    const w = new Int8Array(c);
    const sAcc = new Float64Array(c);
    for (let i = 0; i < c; i++) {
      const sw = a[i] === 0 ? 1 : Math.fround(Math.abs(a[i]!) / 127);
      w[i] = a[i] === 0 ? 0 : a[i]! > 0 ? 127 : -127;
      sAcc[i] = sx * sw;
    }
    const sOut = Math.fround(out.scale[0]!);
    const module = new FixedConv({
      kind: 'conv',
      weight: new Tensor({ data: w, shape: [c, 1, 1, 1], dtype: 'int8' }),
      attrs: { stride: [1, 1], padding: [0, 0], dilation: [1, 1], groups: c },
      bias: env.numerics.quantizeBias(b, sAcc, ctx.rounding),
      sumin: null,
      requant: env.numerics.requantize(sAcc, sOut, out.dtype, ctx.warn),
      outScale: Float32Array.of(sOut),
      activation: null,
      relu6Max: Infinity,
    });
    return { module, outputQparams: out };
  },
};
