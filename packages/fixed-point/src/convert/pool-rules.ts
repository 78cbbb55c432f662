import { AdaptiveAvgPool2d, AvgPool2d } from '@qtk/nn';
import { avgPoolWindowList, FixedAvgPool2d } from '../modules/fixed-avg-pool.js';
import type { RequantizeRule } from '../requantize.js';
import {
  isModule,
  type MarchEnv,
  opNameOf,
  type ConvertRule,
  type MarchNumerics,
  unsupportedAt,
} from './march-converter.js';

/** The march's requantize rule, read off a plan of its numerics (modules keep the rule name, which serializes). */
export function requantizeRuleOf(numerics: MarchNumerics): RequantizeRule {
  return numerics.requantize(1, 1, 'qint8').rule;
}

function maxKernelOf(env: MarchEnv): number | undefined {
  const cap = env.table.ops.find((o) => o.op === 'AveragePool');
  const c = cap?.constraints.find((k) => k.kind === 'max' && k.attr === 'kernelSize');
  return c && c.kind === 'max' ? c.value : undefined;
}

function sizeOf(m: AdaptiveAvgPool2d): [number | null, number | null] {
  const size = typeof m.outputSize === 'number' ? [m.outputSize, m.outputSize] : m.outputSize;
  return [size[0] ?? null, size[1] ?? null];
}

/** AvgPool2d and AdaptiveAvgPool2d: int32 window sums requantized from s_in / N. */
export const POOL_RULES = [
  {
    name: 'avg_pool2d',
    ops: ['AveragePool'],
    match: (ctx) => isModule(ctx, AvgPool2d),
    attrs: (ctx) => ({ kernelSize: (ctx.module as AvgPool2d).kernelSize }),
    build(ctx, env) {
      const m = ctx.module as AvgPool2d;
      const out = ctx.outputQparams;
      if (!out) throw unsupportedAt(ctx, env.march, 'it has no output fake-quant');
      const attrs = {
        kernel: m.kernelSize,
        stride: m.stride,
        padding: m.padding,
        ceilMode: m.ceilMode,
        countIncludePad: m.countIncludePad,
        divisorOverride: m.divisorOverride ?? null,
      };
      return {
        module: new FixedAvgPool2d({ kind: 'fixed', attrs }, out.scale[0]!, out.dtype, env.numerics.requantize),
        outputQparams: out,
      };
    },
  },
  {
    // a march without AdaptiveAveragePool runs it as an AveragePool whose windows it checks at run time
    name: 'adaptive_avg_pool2d',
    ops: ['AdaptiveAveragePool', 'AveragePool'],
    match: (ctx) => isModule(ctx, AdaptiveAvgPool2d),
    // as an AveragePool, the windows must fit its kernel limit: known once calibration saw the input size
    refuse(ctx, env) {
      const max = env.op === 'AveragePool' ? maxKernelOf(env) : undefined;
      const shape = ctx.inputShape;
      if (max === undefined || !shape || shape.length < 3) return null;
      const [H, W] = [shape[shape.length - 2]!, shape[shape.length - 1]!];
      const { windows } = avgPoolWindowList(
        { kind: 'adaptive', outputSize: sizeOf(ctx.module as AdaptiveAvgPool2d) },
        H,
        W,
      );
      const big = windows.find((w) => w.y1 - w.y0 > max || w.x1 - w.x0 > max);
      return big
        ? `as an AveragePool its ${big.y1 - big.y0}×${big.x1 - big.x0} window (input ${H}×${W}) exceeds the kernel limit of ${max}`
        : null;
    },
    build(ctx, env) {
      const m = ctx.module as AdaptiveAvgPool2d;
      const out = ctx.outputQparams;
      if (!out) throw unsupportedAt(ctx, env.march, 'it has no output fake-quant');
      const size = sizeOf(m);
      const windows = {
        kind: 'adaptive' as const,
        outputSize: size,
        ...(env.op === 'AveragePool'
          ? {
              maxKernel: maxKernelOf(env),
              where: `node '${ctx.node.name}', op '${opNameOf(ctx)}' as AveragePool, march '${env.march}'`,
            }
          : {}),
      };
      return {
        module: new FixedAvgPool2d(windows, out.scale[0]!, out.dtype, env.numerics.requantize),
        outputQparams: out,
      };
    },
  },
] satisfies readonly ConvertRule[];
