// Eager-mode prepare (horizon_plugin_pytorch's and PyTorch's prepare_qat): module swaps on the model's
// own tree, without tracing, so models whose forward cannot be traced (data-dependent control flow)
// quantize too. The swaps are prepareQatFx's (qatReplacementFor); what a traced graph adds, an
// activation fake-quant after each functional op, eager models get from their FloatFunctionals.
import { defaultQatQconfig, FakeQuantize, type QConfig } from '@qtk/fake-quant';
import { DeQuantStub, deepCopy, FloatFunctional, Module } from '@qtk/nn';
import type { MarchBackendV1 } from '@qtk/spec';
import { InvalidArgumentError, opOfModule } from '@qtk/tensor';
import { checkQconfigForMarch } from '../march.js';
import { createFakeQuant, qatReplacementFor } from '../prepare-passes.js';
import { requireMarch } from '../prepare-qat-fx.js';
import { QatModule } from '../qat-module.js';
import { isQConfig, QconfigResolver, type QConfigDict } from '../qconfig-dict.js';
import { CpuModule } from './cpu-module.js';
import { QatFloatFunctional } from './qat-float-functional.js';

export interface PrepareQatOptions {
  /** The target march (a registered id or a backend); default: the one chosen with setMarch. */
  march?: string | MarchBackendV1;
  /**
   * Heterogeneous model: op modules whose qconfig is null stay float and run on the CPU; their outputs
   * get an activation fake-quant (of `hybridQconfig`) so that quantized modules after them read a
   * calibrated scale, and convert quantizes there again. A module the march cannot convert runs on the
   * CPU too (convert warns).
   */
  hybrid?: boolean;
  /** With `hybrid`: the qconfig whose activation fake-quant observes CPU modules' outputs (default: the global one, else defaultQatQconfig). */
  hybridQconfig?: QConfig;
  /** Edit `model` itself instead of a copy (default false). */
  inplace?: boolean;
}

const eagerMarch = new WeakMap<Module, { march: string; hybrid: boolean }>();

/** The march and mode an eager model was prepared for (null for a model prepareQat did not make). */
export function eagerPreparation(model: Module): { march: string; hybrid: boolean } | null {
  return eagerMarch.get(model) ?? null;
}

const OPTION_KEYS = new Set(['march', 'hybrid', 'hybridQconfig', 'inplace']);
const isOptions = (x: unknown): x is PrepareQatOptions =>
  x !== null &&
  typeof x === 'object' &&
  !isQConfig(x) &&
  !['global', 'moduleType', 'moduleName'].some((k) => Object.hasOwn(x, k)) &&
  Object.keys(x).every((k) => OPTION_KEYS.has(k));

/**
 * Prepares a float module tree for calibration and QAT in eager mode: `prepareQat(model, qconfig)`
 * (every module), `prepareQat(model, qconfigDict)` (as prepareQatFx's), or `prepareQat(model, options)`
 * with the qconfigs set on the modules themselves (`module.qconfig = ...`, a child's winning over its
 * parent's). Conv / linear families, fused modules (fuseModules), op modules with an output scale of
 * their own and QuantStubs are swapped for their QAT forms, as prepareQatFx swaps them; each
 * FloatFunctional gets one output fake-quant. forward must quantize its inputs with QuantStubs and
 * compute with modules and FloatFunctionals (tensor functions on quantized values are not converted).
 * Returns a copy (parameters copied too) unless `inplace`.
 */
export function prepareQat(model: Module, options?: PrepareQatOptions): Module;
export function prepareQat(model: Module, qconfig: QConfig | QConfigDict | null, options?: PrepareQatOptions): Module;
export function prepareQat(
  model: Module,
  second?: QConfig | QConfigDict | PrepareQatOptions | null,
  third: PrepareQatOptions = {},
): Module {
  if (!(model instanceof Module)) throw new InvalidArgumentError('prepareQat: model must be a Module');
  const optionsForm = second === undefined || isOptions(second);
  const options = optionsForm ? ((second as PrepareQatOptions | undefined) ?? {}) : third;
  const dict: QConfigDict = optionsForm
    ? {}
    : second === null || isQConfig(second)
      ? { global: second }
      : (second as QConfigDict);
  if (model.namedModules().some(([, m]) => m instanceof FakeQuantize || m instanceof QatFloatFunctional))
    throw new InvalidArgumentError(
      'prepareQat: the model is already prepared (it has fake-quants); prepare the float model',
    );
  const march = requireMarch(options.march, 'prepareQat');
  const out = options.inplace ? model : deepCopy(model);
  const resolver = new QconfigResolver(out, dict);
  const hybridQconfig = options.hybridQconfig ?? dict.global ?? defaultQatQconfig;
  const replaced: string[] = [];
  for (const [path, module] of out.namedModules()) {
    if (path === '' || replaced.some((r) => path.startsWith(`${r}.`))) continue;
    const qc = resolver.resolve(path);
    const replacement = qc
      ? eagerQatForm(march, module, qc, path)
      : options.hybrid
        ? cpuForm(march, module, hybridQconfig, path, () =>
            module.namedModules(path).every(([p]) => resolver.resolve(p) === null),
          )
        : null;
    if (!replacement) continue;
    out.setSubmodule(path, replacement);
    replaced.push(path);
  }
  eagerMarch.set(out, { march: march.id, hybrid: options.hybrid === true });
  return out;
}

/** The QAT form of one module under its qconfig: prepareQatFx's, and for a FloatFunctional its output fake-quant. */
function eagerQatForm(march: MarchBackendV1, module: Module, qc: QConfig, path: string): Module | null {
  if (!(module instanceof FloatFunctional)) return qatReplacementFor(march, module, qc, path);
  const fq = createFakeQuant(qc.activation, path);
  checkQconfigForMarch(march, path, 'FloatFunctional', { activation: fq, weight: null });
  return new QatFloatFunctional(module, fq, path);
}

/**
 * In hybrid mode, an op module left float, or a container whose every module is: it runs on the CPU, its
 * output observed for the quantized modules after it.
 */
function cpuForm(
  march: MarchBackendV1,
  module: Module,
  qc: QConfig,
  path: string,
  allFloat: () => boolean,
): Module | null {
  if (module instanceof DeQuantStub || module instanceof QatModule) return null;
  const isOp = module instanceof FloatFunctional || opOfModule(module) !== null;
  if (!isOp && !allFloat()) return null;
  const fq = createFakeQuant(qc.activation, path);
  checkQconfigForMarch(march, path, module.constructor.name, { activation: fq, weight: null });
  return new CpuModule(module, fq, path);
}
