// Serialization codecs of the fixed-point modules (see @qtk/ir's moduleCodecs): each module's
// constructor data as JSON (plans and tables are small integer arrays); integer tensors (FixedConv's
// weight) are buffers, carried by the state dict. Registered when @qtk/fixed-point loads.
import { ModuleConfigError, moduleCodecs, SerializationError, type JsonValue, type ModuleCodec } from '@qtk/ir';
import type { Module } from '@qtk/nn';
import { zeros } from '@qtk/tensor';
import { z } from 'zod';
import * as S from './codec-schemas.js';
import { toJsonData } from './codec-json.js';
import { FixedAdd } from './modules/fixed-add.js';
import { FixedAvgPool2d } from './modules/fixed-avg-pool.js';
import { FixedCat } from './modules/fixed-cat.js';
import { FixedLayerNorm } from './modules/fixed-layer-norm.js';
import { FixedSoftmax } from './modules/fixed-softmax.js';
import { FixedClamp } from './modules/fixed-clamp.js';
import { FixedCompare } from './modules/fixed-compare.js';
import { FixedConv } from './modules/fixed-conv.js';
import { FixedMinMax } from './modules/fixed-min-max.js';
import { FixedMatMul } from './modules/fixed-matmul.js';
import { FixedMul } from './modules/fixed-mul.js';
import { FixedReduce } from './modules/fixed-reduce.js';
import { FixedResize } from './modules/fixed-resize.js';
import { FixedTableOp } from './modules/fixed-table-op.js';
import { FixedValueOp, type ValueOpTarget } from './modules/fixed-value-op.js';
import { Dequantize, Quantize } from './modules/quantize.js';
import { YuvInputQuantize } from './modules/yuv-input-quantize.js';
import type { RequantizePlan } from './requantize.js';
import { storedPlannerName } from './requantize-planners.js';

const enc = (cls: string, v: unknown) => toJsonData(v, cls);

/** Modules built from one plain-data `config` object, kept as `module.config`; `schema` checks the stored (decoded) config. */
function configCodec<M extends Module & { config: unknown }>(
  // biome-ignore lint/suspicious/noExplicitAny: each module class takes its own config type
  cls: new (config: any) => M,
  schema: z.ZodTypeAny,
): ModuleCodec<M> {
  return { cls, schema, config: (m) => enc(cls.name, m.config), create: (c) => new cls(c) };
}

/** The codec config of a child module (FixedValueOp's float op), or an error naming what is missing. */
function childSpec(m: Module, where: string): JsonValue {
  const codec = moduleCodecs.forModule(m);
  if (!codec) {
    throw new SerializationError(
      `${where}: its float op is a ${m.constructor.name}, which has no module codec; register one with moduleCodecs.register({ cls, schema, config, create })`,
    );
  }
  return { type: m.constructor.name, config: codec.config(m) };
}

type Parsed<T extends z.ZodTypeAny> = z.infer<T>;

const CODECS: ModuleCodec[] = [
  {
    cls: Quantize,
    schema: S.quantizeSchema,
    config: (m: Quantize) => ({ scale: m.scale, dtype: m.dtype, rounding: m.rounding }),
    create: (c: Parsed<typeof S.quantizeSchema>) =>
      new Quantize({ scale: Float32Array.of(c.scale), dtype: c.dtype }, c.rounding),
  },
  { cls: Dequantize, schema: z.null(), config: () => null, create: () => new Dequantize() },
  {
    cls: FixedConv,
    schema: S.fixedConvSchema,
    config: (m: FixedConv) => {
      const { weight, ...rest } = m.config;
      return enc('FixedConv', { ...rest, weightShape: [...weight.shape] });
    },
    create: (c: Parsed<typeof S.fixedConvSchema>) => {
      const { weightShape, ...rest } = c;
      return new FixedConv({ ...rest, weight: zeros(weightShape, { dtype: 'int8' }) });
    },
    tensors: (c: Parsed<typeof S.fixedConvSchema>) => [{ name: 'weight', shape: c.weightShape, field: 'weightShape' }],
  },
  {
    cls: FixedAvgPool2d,
    schema: S.fixedAvgPoolSchema,
    config: (m: FixedAvgPool2d) =>
      enc('FixedAvgPool2d', {
        windows: m.windows,
        outScale: m.outScale,
        outDtype: m.outDtype,
        rule: storedPlannerName(m.planner, 'FixedAvgPool2d'),
      }),
    create: (d: Parsed<typeof S.fixedAvgPoolSchema>) =>
      new FixedAvgPool2d(d.windows as FixedAvgPool2d['windows'], d.outScale, d.outDtype, d.rule),
  },
  {
    cls: FixedReduce,
    schema: S.fixedReduceSchema,
    config: (m: FixedReduce) => ({
      kind: m.kind,
      outScale: m.outScale,
      outDtype: m.outDtype,
      rule: storedPlannerName(m.planner, 'FixedReduce'),
    }),
    create: (c: Parsed<typeof S.fixedReduceSchema>) => new FixedReduce(c.kind, c.outScale, c.outDtype, c.rule),
  },
  {
    cls: FixedValueOp,
    schema: S.fixedValueOpSchema,
    config: (m: FixedValueOp) => {
      const t = m.target;
      const target =
        t.kind === 'module'
          ? { kind: 'module', module: childSpec(t.module, `FixedValueOp '${m.label}'`) }
          : { kind: t.kind, name: t.name };
      return enc('FixedValueOp', { target, label: m.label, output: m.output });
    },
    create: (d: Parsed<typeof S.fixedValueOpSchema>) => {
      const t = d.target;
      let target: ValueOpTarget;
      if (t.kind === 'module') {
        if (!moduleCodecs.has(t.module.type))
          throw new ModuleConfigError(
            undefined,
            'FixedValueOp',
            'target.module.type',
            `no module codec for '${t.module.type}'`,
          );
        target = {
          kind: 'module',
          module: moduleCodecs.build(t.module.type, t.module.config, {
            field: 'target.module.config',
            child: 'module',
          }),
        };
      } else {
        target = { kind: t.kind, name: t.name };
      }
      return new FixedValueOp(target, d.label, d.output);
    },
  },
  {
    cls: FixedResize,
    schema: S.fixedResizeSchema,
    config: (m: FixedResize) => {
      const plan = (m as unknown as { plan: RequantizePlan | null }).plan;
      return enc('FixedResize', {
        options: m.options,
        output: plan ? { scale: m.outScale, dtype: m.outDtype, plan } : null,
        rounding: m.rounding,
      });
    },
    create: (c: Parsed<typeof S.fixedResizeSchema>) => new FixedResize(c),
  },
  {
    cls: FixedClamp,
    schema: S.fixedClampSchema,
    config: (m: FixedClamp) =>
      enc('FixedClamp', { kind: m.kind, rounding: m.rounding, requant: m.requant, outScale: m.outScale }),
    create: (d: Parsed<typeof S.fixedClampSchema>) => new FixedClamp(d.kind, d.rounding, d.requant, d.outScale),
  },
  configCodec(FixedAdd, S.fixedAddSchema),
  configCodec(FixedMul, S.fixedMulSchema),
  configCodec(FixedMatMul, S.fixedMatMulSchema),
  configCodec(FixedCat, S.fixedCatSchema),
  configCodec(FixedMinMax, S.fixedMinMaxSchema),
  configCodec(FixedCompare, S.fixedCompareSchema),
  configCodec(FixedTableOp, S.fixedTableOpSchema),
  configCodec(FixedSoftmax, S.fixedSoftmaxSchema),
  configCodec(FixedLayerNorm, S.fixedLayerNormSchema),
  configCodec(YuvInputQuantize, S.yuvInputQuantizeSchema),
];

/** Registers the codecs of every fixed-point module with @qtk/ir's moduleCodecs (idempotent). */
export function registerFixedPointCodecs(): void {
  for (const c of CODECS) moduleCodecs.register(c);
}

registerFixedPointCodecs();
