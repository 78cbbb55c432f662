// Serialization codecs of the fixed-point modules (see @qtk/ir's moduleCodecs): each module's
// constructor data as JSON (plans and tables are small integer arrays); integer tensors (FixedConv's
// weight) are buffers, carried by the state dict. Registered when @qtk/fixed-point loads.
import { moduleCodecs, SerializationError, type JsonValue, type ModuleCodec } from '@qtk/ir';
import type { Module } from '@qtk/nn';
import { InvalidArgumentError, zeros } from '@qtk/tensor';
import { fromJsonData, toJsonData } from './codec-json.js';
import { FixedAdd } from './modules/fixed-add.js';
import { FixedAvgPool2d, type WindowPlanner } from './modules/fixed-avg-pool.js';
import { FixedCat } from './modules/fixed-cat.js';
import { FixedLayerNorm } from './modules/fixed-layer-norm.js';
import { FixedSoftmax } from './modules/fixed-softmax.js';
import { FixedClamp } from './modules/fixed-clamp.js';
import { FixedCompare } from './modules/fixed-compare.js';
import { FixedConv, type FixedConvConfig } from './modules/fixed-conv.js';
import { FixedMinMax } from './modules/fixed-min-max.js';
import { FixedMul } from './modules/fixed-mul.js';
import { FixedReduce } from './modules/fixed-reduce.js';
import { FixedResize } from './modules/fixed-resize.js';
import { FixedTableOp } from './modules/fixed-table-op.js';
import { FixedValueOp, type ValueOpTarget } from './modules/fixed-value-op.js';
import { Dequantize, Quantize } from './modules/quantize.js';
import { requantizePlanner, type RequantizePlan, type RequantizeRule } from './requantize.js';

const enc = (cls: string, v: unknown) => toJsonData(v, cls);
const dec = <T>(cls: string, v: JsonValue): T => fromJsonData(v, cls) as T;

/** Modules built from one plain-data `config` object, kept as `module.config`. */
function configCodec<M extends Module & { config: unknown }>(cls: new (config: any) => M): ModuleCodec<M> {
  return { cls, config: (m) => enc(cls.name, m.config), create: (c) => new cls(dec(cls.name, c)) };
}

/** A planner function's rule: every plan names the rule that made it. */
function ruleOfPlanner(planner: WindowPlanner, where: string): RequantizeRule {
  const rule = planner(1, 1, 'qint8').rule;
  if (rule !== 'int16_intermediate' && rule !== 'wide') throw new SerializationError(`${where}: its planner makes plans of an unknown rule '${String(rule)}'`);
  return rule;
}

/** The codec config of a child module (FixedValueOp's float op), or an error naming what is missing. */
function childSpec(m: Module, where: string): JsonValue {
  const codec = moduleCodecs.forModule(m);
  if (!codec) {
    throw new SerializationError(`${where}: its float op is a ${m.constructor.name}, which has no module codec; register one with moduleCodecs.register({ cls, config, create })`);
  }
  return { type: m.constructor.name, config: codec.config(m) };
}

const CODECS: ModuleCodec[] = [
  {
    cls: Quantize,
    config: (m: Quantize) => ({ scale: m.scale, dtype: m.dtype, rounding: m.rounding }),
    create: (c) => new Quantize({ scale: Float32Array.of(c.scale), dtype: c.dtype }, c.rounding),
  },
  { cls: Dequantize, config: () => null, create: () => new Dequantize() },
  {
    cls: FixedConv,
    config: (m: FixedConv) => {
      const { weight, ...rest } = m.config;
      return enc('FixedConv', { ...rest, weightShape: [...weight.shape] });
    },
    create: (c) => {
      const { weightShape, ...rest } = dec<Omit<FixedConvConfig, 'weight'> & { weightShape: number[] }>('FixedConv', c);
      return new FixedConv({ ...rest, weight: zeros(weightShape, { dtype: 'int8' }) });
    },
  },
  {
    cls: FixedAvgPool2d,
    config: (m: FixedAvgPool2d) => enc('FixedAvgPool2d', { windows: m.windows, outScale: m.outScale, outDtype: m.outDtype, rule: m.rule }),
    create: (c) => {
      const d = dec<{ windows: FixedAvgPool2d['windows']; outScale: number; outDtype: FixedAvgPool2d['outDtype']; rule: RequantizeRule }>('FixedAvgPool2d', c);
      return new FixedAvgPool2d(d.windows, d.outScale, d.outDtype, d.rule);
    },
  },
  {
    cls: FixedReduce,
    config: (m: FixedReduce) => ({
      kind: m.kind,
      outScale: m.outScale,
      outDtype: m.outDtype,
      rule: ruleOfPlanner((m as unknown as { planner: WindowPlanner }).planner, 'FixedReduce'),
    }),
    create: (c) => {
      const plan = requantizePlanner(c.rule);
      return new FixedReduce(c.kind, c.outScale, c.outDtype, (a, o, d) => plan(a, o, d));
    },
  },
  {
    cls: FixedValueOp,
    config: (m: FixedValueOp) => {
      const t = m.target;
      const target = t.kind === 'module' ? { kind: 'module', module: childSpec(t.module, `FixedValueOp '${m.label}'`) } : { kind: t.kind, name: t.name };
      return enc('FixedValueOp', { target, label: m.label, output: m.output });
    },
    create: (c) => {
      const d = dec<{ target: { kind: string; name?: string; module?: { type: string; config: JsonValue } }; label: string; output: FixedValueOp['output'] }>('FixedValueOp', c);
      let target: ValueOpTarget;
      if (d.target.kind === 'module') {
        const spec = d.target.module!;
        target = { kind: 'module', module: moduleCodecs.get(spec.type).create(spec.config) };
      } else if (d.target.kind === 'function' || d.target.kind === 'method') {
        target = { kind: d.target.kind, name: d.target.name! };
      } else {
        throw new InvalidArgumentError(`FixedValueOp: unknown target kind '${d.target.kind}'`);
      }
      return new FixedValueOp(target, d.label, d.output);
    },
  },
  {
    cls: FixedResize,
    config: (m: FixedResize) => {
      const plan = (m as unknown as { plan: RequantizePlan | null }).plan;
      return enc('FixedResize', {
        options: m.options,
        output: plan ? { scale: m.outScale, dtype: m.outDtype, plan } : null,
        rounding: m.rounding,
      });
    },
    create: (c) => new FixedResize(dec('FixedResize', c)),
  },
  {
    cls: FixedClamp,
    config: (m: FixedClamp) => enc('FixedClamp', { kind: m.kind, rounding: m.rounding, requant: m.requant, outScale: m.outScale }),
    create: (c) => {
      const d = dec<Pick<FixedClamp, 'kind' | 'rounding' | 'requant' | 'outScale'>>('FixedClamp', c);
      return new FixedClamp(d.kind, d.rounding, d.requant, d.outScale);
    },
  },
  configCodec(FixedAdd),
  configCodec(FixedMul),
  configCodec(FixedCat),
  configCodec(FixedMinMax),
  configCodec(FixedCompare),
  configCodec(FixedTableOp),
  configCodec(FixedSoftmax),
  configCodec(FixedLayerNorm),
];

/** Registers the codecs of every fixed-point module with @qtk/ir's moduleCodecs (idempotent). */
export function registerFixedPointCodecs(): void {
  for (const c of CODECS) moduleCodecs.register(c);
}

registerFixedPointCodecs();
