// Schemas of the fixed-point modules' stored configs, checked at load (see codecs.ts): a damaged or
// hand-edited file is refused with the field named instead of failing at first inference. They
// check the decoded data (typed arrays, plans), ranges and that per-channel lengths agree.
import { CONFIG_LIMITS, type JsonValue } from '@qtk/ir';
import { QUANT_DTYPES, quantDTypeSchema, roundingModeSchema } from '@qtk/spec';
import { traceables } from '@qtk/tensor';
import { z } from 'zod';
import { fromJsonData } from './codec-json.js';
import { requantizePlanners } from './requantize-planners.js';

/** Decodes the JSON form (codec-json.ts) before the schema; a malformed encoding is an issue, not a throw. */
export function decoded<T extends z.ZodTypeAny>(where: string, schema: T) {
  return z.preprocess((v, ctx) => {
    try {
      return fromJsonData(v as JsonValue, where);
    } catch (e) {
      // fromJsonData names the value as `${where}.field[i]: problem`: report it as the issue's path
      const m = /^[\w$]+((?:\.[\w$]+|\[\d+\])*): (.*)$/s.exec((e as Error).message);
      const path = m
        ? m[1]!
            .split(/\.|\[|\]/)
            .filter(Boolean)
            .map((p) => (/^\d+$/.test(p) ? Number(p) : p))
        : [];
      ctx.addIssue({ code: z.ZodIssueCode.custom, path, message: m ? m[2]! : (e as Error).message });
      return z.NEVER;
    }
  }, schema);
}

const I32 = 2 ** 31;
const qtensorDType = z.enum([...QUANT_DTYPES, 'qbool'] as const);
export const requantizeRule = z.enum(['int16_intermediate', 'wide']);
/** The name a requantize planner is registered under (requantizePlanners). */
export const plannerName = z.string().refine(
  (n) => requantizePlanners.has(n),
  (n) => ({
    message: `no requantize planner '${n}' is registered (registered: ${requantizePlanners.names().join(', ')})`,
  }),
);
/** A scale: positive and finite. */
export const scale = z.number().positive().finite();
const int32 = z
  .number()
  .int()
  .min(-I32)
  .max(I32 - 1);
const shift = z.number().int().min(0).max(62);
const int32Array = z.instanceof(Int32Array, { message: 'expected an Int32Array' });
const posInt = z.number().int().positive();
const nonNegInt = z.number().int().nonnegative();
const padInt = nonNegInt.max(CONFIG_LIMITS.padding);
const outSize = posInt.max(CONFIG_LIMITS.outputSize);

function everyIn(a: Int32Array, lo: number, hi: number): boolean {
  for (const v of a) if (v < lo || v > hi) return false;
  return true;
}

export const requantizePlan = z
  .object({
    version: z.literal(1),
    rule: requantizeRule,
    outDtype: quantDTypeSchema,
    pre: int32Array,
    m: int32Array,
    n: int32Array,
  })
  .strict()
  .superRefine((p, ctx) => {
    if (p.m.length === 0)
      ctx.addIssue({ code: z.ZodIssueCode.custom, path: ['m'], message: 'a plan needs at least one channel' });
    if (p.pre.length !== p.m.length || p.n.length !== p.m.length) {
      ctx.addIssue({
        code: z.ZodIssueCode.custom,
        path: ['n'],
        message: `pre, m and n must have one entry per channel (lengths ${p.pre.length}, ${p.m.length}, ${p.n.length})`,
      });
    }
    if (!everyIn(p.pre, 0, 62))
      ctx.addIssue({ code: z.ZodIssueCode.custom, path: ['pre'], message: 'shifts must be integers in [0, 62]' });
    if (!everyIn(p.n, 0, 62))
      ctx.addIssue({ code: z.ZodIssueCode.custom, path: ['n'], message: 'shifts must be integers in [0, 62]' });
  });
export type RequantizePlanData = z.infer<typeof requantizePlan>;

/** The channels of a plan are 1 (per tensor) or `channels`. */
export function planFits(
  plan: { m: Int32Array } | null,
  channels: number,
  path: (string | number)[],
  ctx: z.RefinementCtx,
): void {
  if (plan && plan.m.length !== 1 && plan.m.length !== channels) {
    ctx.addIssue({
      code: z.ZodIssueCode.custom,
      path,
      message: `has ${plan.m.length} channels; expected 1 or ${channels}`,
    });
  }
}

export const scalarOperand = z.object({ value: int32, scale, dtype: qtensorDType }).strict();
export const scalars = z.tuple([scalarOperand.nullable(), scalarOperand.nullable()]);

const addTerm = z.object({ m: int32, shift: z.number().int().min(-62).max(62), negate: z.boolean() }).strict();
/**
 * An add plan: its terms, accumulator scale and saturation, nothing about what planned it. Version 1
 * plans also named their planner (`rule`); they are read as version 2 without the name.
 */
export const addPlan = z.preprocess((v) => {
  if (typeof v !== 'object' || v === null || (v as { version?: unknown }).version !== 1) return v;
  const { rule, ...rest } = v as Record<string, unknown>;
  return typeof rule === 'string' ? { ...rest, version: 2 } : v;
}, z.object({ version: z.literal(2), a: addTerm, b: addTerm, sAcc: scale, saturate32: z.boolean() }).strict());

export const suminPlan = z
  .object({ version: z.literal(1), m: int32Array, n: int32Array, k: int32Array })
  .strict()
  .refine((p) => p.n.length === p.m.length && p.k.length === p.m.length, {
    message: 'm, n and k must have one entry per channel',
    path: ['k'],
  });

const int16 = z.number().int().min(-32768).max(32767);
const safeInt = z.number().int().min(Number.MIN_SAFE_INTEGER).max(Number.MAX_SAFE_INTEGER);
const segmentLine = z
  .object({ alpha: safeInt, sign: z.union([z.literal(1), z.literal(-1)]), r: shift, beta: safeInt })
  .strict();
const segmentTable = z
  .object({
    version: z.literal(1),
    function: z.string(),
    sIn: scale,
    sOut: scale,
    sO: scale,
    outDtype: z.enum(['qint8', 'qint16']),
    dividing: z.enum(['even', 'curvature', 'explicit']),
    inputRange: z.tuple([z.number().finite(), z.number().finite()]).optional(),
    odd: z.boolean(),
    B: z.array(int16).length(8),
    tables: z.array(z.array(int16).length(64)).length(6),
    index: z.array(z.object({ alpha: safeInt, r: shift }).strict()).length(6),
    lines: z.tuple([segmentLine, segmentLine]),
    flags: z.object({ multiplierSaturated: z.boolean(), degenerateSegments: z.array(nonNegInt) }).strict(),
  })
  .strict()
  .refine((t) => t.B.every((b, i) => i === 0 || b >= t.B[i - 1]!), {
    message: 'dividing points must be non-decreasing',
    path: ['B'],
  });

export const tablePlan = z.union([
  z
    .object({
      kind: z.literal('lut'),
      entries: z.union([z.instanceof(Int8Array), z.instanceof(Int16Array)], {
        errorMap: () => ({ message: 'expected an Int8Array or Int16Array' }),
      }),
    })
    .strict()
    .refine((p) => p.entries.length === 256, { message: 'a lookup table has 256 entries', path: ['entries'] }),
  z.object({ kind: z.literal('segment'), table: segmentTable }).strict(),
]);

/** Every requantize plan `key` of a config writes `outDtype`. */
export function sameOutDtype(keys: string[]) {
  return (c: Record<string, unknown> & { outDtype: string }, ctx: z.RefinementCtx) => {
    for (const k of keys) {
      const p = c[k] as { outDtype: string } | null;
      if (p && p.outDtype !== c.outDtype)
        ctx.addIssue({
          code: z.ZodIssueCode.custom,
          path: [k, 'outDtype'],
          message: `is ${p.outDtype}, the module's outDtype is ${c.outDtype}`,
        });
    }
  };
}

export const quantizeSchema = z.object({ scale, dtype: quantDTypeSchema, rounding: roundingModeSchema }).strict();

const MAX_ELEMENTS = 2 ** 31 - 1;
const convAttrs = z
  .object({
    stride: z.array(posInt).optional(),
    padding: z.array(padInt).optional(),
    dilation: z.array(posInt).optional(),
    groups: posInt.optional(),
    outputPadding: z.array(padInt).optional(),
  })
  .strict();

export const fixedConvSchema = decoded(
  'FixedConv',
  z
    .object({
      kind: z.enum(['conv', 'conv_transpose', 'linear']),
      attrs: convAttrs,
      bias: int32Array.nullable(),
      sumin: suminPlan.nullable(),
      requant: requantizePlan.nullable(),
      outScale: z.instanceof(Float32Array, { message: 'expected a Float32Array' }),
      activation: z.enum(['relu', 'relu6']).nullable(),
      relu6Max: z.number().refine((v) => Number.isInteger(v) || v === Infinity, {
        message: 'must be an integer (Infinity without a ReLU6)',
      }),
      weightShape: z.array(posInt).min(2).max(5),
    })
    .strict()
    .superRefine((c, ctx) => {
      const issue = (path: (string | number)[], message: string) =>
        ctx.addIssue({ code: z.ZodIssueCode.custom, path, message });
      const w = c.weightShape;
      if (w.reduce((a, b) => a * b, 1) > MAX_ELEMENTS)
        return issue(['weightShape'], `[${w.join(', ')}] has more elements than a tensor can hold`);
      if (c.kind === 'linear' && w.length !== 2)
        issue(['weightShape'], `a linear weight is [out, in], got [${w.join(', ')}]`);
      const rank = w.length - 2;
      for (const k of ['stride', 'padding', 'dilation', 'outputPadding'] as const) {
        const a = c.attrs[k];
        if (a && c.kind !== 'linear' && a.length !== rank)
          issue(['attrs', k], `has ${a.length} entries; the weight [${w.join(', ')}] has ${rank} spatial dims`);
      }
      const groups = c.attrs.groups ?? 1;
      const out = c.kind === 'conv_transpose' ? w[1]! * groups : w[0]!;
      if (c.kind !== 'conv_transpose' && out % groups !== 0)
        issue(['attrs', 'groups'], `${groups} does not divide the ${out} output channels`);
      if (c.bias && c.bias.length !== out)
        issue(['bias'], `has ${c.bias.length} entries; the weight has ${out} output channels`);
      planFits(c.requant, out, ['requant', 'm'], ctx);
      if (c.sumin && c.sumin.m.length !== 1 && c.sumin.m.length !== out)
        issue(['sumin', 'm'], `has ${c.sumin.m.length} channels; expected 1 or ${out}`);
      if (c.outScale.length !== 1 && c.outScale.length !== out)
        issue(['outScale'], `has ${c.outScale.length} entries; expected 1 or ${out}`);
      if (!c.outScale.every((s) => s > 0 && Number.isFinite(s)))
        issue(['outScale'], 'scales must be positive and finite');
    }),
);

const avgPoolExtra = { maxKernel: posInt.optional(), where: z.string().optional() };
export const fixedAvgPoolSchema = decoded(
  'FixedAvgPool2d',
  z
    .object({
      windows: z.discriminatedUnion('kind', [
        z
          .object({
            kind: z.literal('fixed'),
            attrs: z
              .object({
                kernel: z.array(posInt).length(2),
                stride: z.array(posInt).length(2),
                padding: z.array(nonNegInt).length(2),
                ceilMode: z.boolean(),
                countIncludePad: z.boolean(),
                divisorOverride: posInt.nullable(),
              })
              .strict()
              .refine((a) => a.padding.every((p, i) => p < a.kernel[i]!), {
                message: 'a padding must be smaller than the kernel',
                path: ['padding'],
              }),
            ...avgPoolExtra,
          })
          .strict(),
        z
          .object({
            kind: z.literal('adaptive'),
            outputSize: z.tuple([outSize.nullable(), outSize.nullable()]),
            ...avgPoolExtra,
          })
          .strict(),
      ]),
      outScale: scale,
      outDtype: quantDTypeSchema,
      rule: plannerName,
    })
    .strict(),
);

export const fixedReduceSchema = z
  .object({ kind: z.enum(['mean', 'sum']), outScale: scale, outDtype: quantDTypeSchema, rule: plannerName })
  .strict();

/** Names of methods the objects of a file could reach through the prototype chain are not targets. */
const methodName = z
  .string()
  .regex(/^[A-Za-z_$][\w$]*$/, 'must be a method name')
  .refine((n) => !(n in Object.prototype), { message: 'names a member of every object, not a tensor method' });

const valueOpOutput = z
  .object({
    scale,
    dtype: quantDTypeSchema,
    plan: requantizePlan.nullable(),
    clamp: z.tuple([int32, int32]).optional(),
  })
  .strict()
  .superRefine((o, ctx) => {
    if (o.plan) planFits(o.plan, 1, ['plan', 'm'], ctx);
    if (o.clamp && o.clamp[0] > o.clamp[1])
      ctx.addIssue({ code: z.ZodIssueCode.custom, path: ['clamp'], message: 'the lower bound is above the upper one' });
  });

export const fixedValueOpSchema = decoded(
  'FixedValueOp',
  z
    .object({
      target: z.discriminatedUnion('kind', [
        z
          .object({ kind: z.literal('module'), module: z.object({ type: z.string(), config: z.unknown() }).strict() })
          .strict(),
        z
          .object({
            kind: z.literal('function'),
            name: z.string().refine((n) => traceables.has(n), { message: 'is not a registered traceable op' }),
          })
          .strict(),
        z.object({ kind: z.literal('method'), name: methodName }).strict(),
      ]),
      label: z.string(),
      output: valueOpOutput.nullable(),
    })
    .strict(),
);

export const fixedResizeSchema = decoded(
  'FixedResize',
  z
    .object({
      options: z
        .object({
          size: z.union([outSize, z.tuple([outSize, outSize])]).optional(),
          scaleFactor: z
            .union([
              scale.max(CONFIG_LIMITS.scaleFactor),
              z.tuple([scale.max(CONFIG_LIMITS.scaleFactor), scale.max(CONFIG_LIMITS.scaleFactor)]),
            ])
            .optional(),
          mode: z.enum(['nearest', 'bilinear']).optional(),
          alignCorners: z.boolean().optional(),
        })
        .strict()
        .refine((o) => (o.size === undefined) !== (o.scaleFactor === undefined), {
          message: 'give exactly one of size and scaleFactor',
          path: ['size'],
        })
        .nullable(),
      output: z
        .object({ scale, dtype: quantDTypeSchema, plan: requantizePlan })
        .strict()
        .superRefine((o, ctx) => planFits(o.plan, 1, ['plan', 'm'], ctx))
        .nullable(),
      rounding: roundingModeSchema,
    })
    .strict(),
);

export const fixedClampSchema = decoded(
  'FixedClamp',
  z
    .object({
      kind: z.enum(['clamp', 'abs']),
      rounding: roundingModeSchema,
      requant: requantizePlan.nullable(),
      outScale: scale.nullable(),
    })
    .strict()
    .refine((c) => (c.requant === null) === (c.outScale === null), {
      message: 'a requantize plan and an output scale go together',
      path: ['outScale'],
    }),
);

export const fixedAddSchema = decoded(
  'FixedAdd',
  z
    .object({
      sub: z.boolean(),
      plan: addPlan,
      requant: requantizePlan,
      outScale: scale,
      outDtype: quantDTypeSchema,
      scalars,
    })
    .strict()
    .superRefine(sameOutDtype(['requant'])),
);
export const fixedMulSchema = decoded(
  'FixedMul',
  z
    .object({ requant: requantizePlan, outScale: scale, outDtype: quantDTypeSchema, scalars })
    .strict()
    .superRefine(sameOutDtype(['requant'])),
);
export const fixedMatMulSchema = decoded(
  'FixedMatMul',
  z
    .object({ requant: requantizePlan, outScale: scale, outDtype: quantDTypeSchema })
    .strict()
    .superRefine(sameOutDtype(['requant'])),
);
export const fixedCatSchema = decoded(
  'FixedCat',
  z
    .object({ requants: z.array(requantizePlan).min(1), outScale: scale, outDtype: quantDTypeSchema })
    .strict()
    .superRefine((c, ctx) =>
      c.requants.forEach((p, i) => {
        if (p.outDtype !== c.outDtype)
          ctx.addIssue({
            code: z.ZodIssueCode.custom,
            path: ['requants', i, 'outDtype'],
            message: `is ${p.outDtype}, the module's outDtype is ${c.outDtype}`,
          });
      }),
    ),
);
export const fixedMinMaxSchema = decoded(
  'FixedMinMax',
  z
    .object({
      kind: z.enum(['maximum', 'minimum']),
      requants: z.tuple([requantizePlan, requantizePlan]),
      outScale: scale,
      outDtype: quantDTypeSchema,
      scalars,
    })
    .strict(),
);
export const fixedCompareSchema = decoded(
  'FixedCompare',
  z.object({ kind: z.enum(['eq', 'ne', 'gt', 'lt', 'ge', 'le']), plan: addPlan, scalars }).strict(),
);
export const fixedTableOpSchema = decoded(
  'FixedTableOp',
  z
    .object({
      label: z.string(),
      inDtype: quantDTypeSchema,
      inScale: scale,
      outScale: scale,
      outDtype: quantDTypeSchema,
      plans: z.array(tablePlan).min(1),
      channelAxis: z.number().int().optional(),
    })
    .strict()
    .superRefine((c, ctx) => {
      if (c.plans.length > 1 && c.channelAxis === undefined)
        ctx.addIssue({
          code: z.ZodIssueCode.custom,
          path: ['channelAxis'],
          message: `${c.plans.length} per-channel tables need a channel axis`,
        });
      c.plans.forEach((p, i) => {
        if ((p.kind === 'lut') !== (c.inDtype === 'qint8'))
          ctx.addIssue({
            code: z.ZodIssueCode.custom,
            path: ['plans', i, 'kind'],
            message: `a ${c.inDtype} input needs a ${c.inDtype === 'qint8' ? 'lut' : 'segment'} table`,
          });
      });
    }),
);
export const fixedSoftmaxSchema = decoded(
  'FixedSoftmax',
  z
    .object({
      dim: z.number().int(),
      inScale: scale,
      inDtype: quantDTypeSchema,
      sub: requantizePlan,
      exp: tablePlan,
      sum: requantizePlan,
      reciprocal: tablePlan,
      mul: requantizePlan,
      outScale: scale,
      outDtype: quantDTypeSchema,
    })
    .strict()
    .superRefine(sameOutDtype(['mul'])),
);
export const fixedLayerNormSchema = decoded(
  'FixedLayerNorm',
  z
    .object({
      features: posInt,
      inScale: scale,
      inDtype: quantDTypeSchema,
      mean: requantizePlan,
      sub: z.object({ mx: int32, mm: int32, sAcc: scale }).strict(),
      subOut: requantizePlan,
      square: requantizePlan,
      variance: requantizePlan,
      rsqrt: tablePlan,
      normalized: requantizePlan,
      affine: z
        .object({
          weight: z.instanceof(Int8Array, { message: 'expected an Int8Array' }),
          bias: int32Array,
          out: requantizePlan,
        })
        .strict()
        .nullable(),
      out: requantizePlan.nullable(),
      outScale: scale,
      outDtype: quantDTypeSchema,
    })
    .strict()
    .superRefine((c, ctx) => {
      if (c.affine) {
        if (c.affine.weight.length !== c.features)
          ctx.addIssue({
            code: z.ZodIssueCode.custom,
            path: ['affine', 'weight'],
            message: `has ${c.affine.weight.length} entries; features is ${c.features}`,
          });
        if (c.affine.bias.length !== c.features)
          ctx.addIssue({
            code: z.ZodIssueCode.custom,
            path: ['affine', 'bias'],
            message: `has ${c.affine.bias.length} entries; features is ${c.features}`,
          });
        planFits(c.affine.out, c.features, ['affine', 'out', 'm'], ctx);
      } else if (!c.out) {
        ctx.addIssue({
          code: z.ZodIssueCode.custom,
          path: ['out'],
          message: 'a layer norm without an affine needs its output plan',
        });
      }
    }),
);

const threeInts = (lo: number, hi: number, what: string) =>
  int32Array.refine((a) => a.length === 3 && everyIn(a, lo, hi), {
    message: `expected 3 ${what} (one per output channel) in [${lo}, ${hi}]`,
  });
export const yuvInputQuantizeSchema = decoded(
  'YuvInputQuantize',
  z
    .object({
      swing: z.enum(['studio', 'full']),
      order: z.enum(['rgb', 'bgr']),
      mean: z.array(z.number().finite()).length(3),
      std: z.array(z.number().positive().finite()).length(3),
      scale,
      dtype: z.enum(['qint8', 'qint16']),
      rounding: roundingModeSchema,
      weight: int32Array.refine((a) => a.length === 9, { message: 'expected 9 weights (3 channels × Y, U, V)' }),
      bias: threeInts(-I32, I32 - 1, 'biases'),
      shift: threeInts(0, 31, 'shifts'),
      min: threeInts(-32768, 32767, 'output minima'),
      max: threeInts(-32768, 32767, 'output maxima'),
    })
    .strict()
    .superRefine((c, ctx) => {
      const r = c.dtype === 'qint8' ? 127 : 32767;
      for (let k = 0; k < 3; k++) {
        if (c.min[k]! > c.max[k]! || c.min[k]! < -r - 1 || c.max[k]! > r)
          ctx.addIssue({
            code: z.ZodIssueCode.custom,
            path: ['max', k],
            message: `channel ${k}'s range [${c.min[k]}, ${c.max[k]}] is empty or outside ${c.dtype}`,
          });
      }
    }),
);
