import { fuseFx, moduleizeFunctionalOps } from '@qtk/fusion';
import { GraphModule, symbolicTrace } from '@qtk/ir';
import { Module, QuantStub } from '@qtk/nn';
import { defaultQatQconfig, FakeQuantize, type QConfig } from '@qtk/fake-quant';
import { InvalidArgumentError, type Tensor } from '@qtk/tensor';
import { marches, QConfigError, type MarchBackendV1 } from '@qtk/spec';
import { getMarch } from './march.js';
import { insertOutputDeQuantStubs } from './output-dequant-stubs.js';
import { HYBRID_MODEL, modelInfoOf, recordModelInfo } from './model-info.js';
import { createPrepareContext, type PreparePass } from './prepare-context.js';
import {
  checkQuantStubPass,
  insertActivationFakeQuantPass,
  swapQatModulesPass,
  swapWrappedModulesPass,
} from './prepare-passes.js';
import { checkAfterDeQuantStubPass, checkOutputPrecisionPass, checkSharedModulesPass } from './prepare-guards.js';
import { moduleNameRecord, type QConfigDict } from './qconfig-dict.js';
import { compositeRewritesPass, marchPreparePassesPass, marchRewritesPass } from './march-prepare-passes.js';
import { stepwiseFloatPass } from './stepwise-float-pass.js';
import { constantOperandsPass } from './constant-operands-pass.js';
import { checkModuleNames } from './module-names.js';
import { carryPreserveQatModePass } from './preserve-qat-mode-pass.js';
import type { HybridDict } from './deploy-device.js';
import {
  checkExampleInputs,
  QCONFIG_SETTERS_PASS,
  type QconfigSetter,
  type QconfigSetterRun,
  qconfigSettersPass,
} from './qconfig-setter.js';

/**
 * The default passes, in order. With `hybrid: true` the `partitioner` option (`hybridPartitioner`
 * from @qtk/hybrid) runs right after 'march-rewrites'.
 */
export const DEFAULT_PREPARE_PASSES: readonly PreparePass[] = Object.freeze([
  { name: 'march-rewrites', run: marchRewritesPass },
  { name: 'swap-qat-modules', run: swapQatModulesPass },
  { name: 'swap-wrapped-modules', run: swapWrappedModulesPass },
  { name: 'insert-activation-fake-quant', run: insertActivationFakeQuantPass },
  { name: 'stepwise-float', run: stepwiseFloatPass },
  { name: 'constant-operands', run: constantOperandsPass },
  { name: 'composite-rewrites', run: compositeRewritesPass },
  { name: 'carry-preserve-qat-mode', run: carryPreserveQatModePass },
  { name: 'march-passes', run: marchPreparePassesPass },
  { name: 'check-quant-stub', run: checkQuantStubPass },
  { name: 'check-shared-modules', run: checkSharedModulesPass },
  { name: 'check-output-precision', run: checkOutputPrecisionPass },
  { name: 'check-after-dequant-stub', run: checkAfterDeQuantStubPass },
]);

export interface PrepareQatFxOptions {
  /** The target march (a registered id or a backend); default: the one chosen with setMarch. One of the two is required. */
  march?: string | MarchBackendV1;
  /** Replaces or edits the pass list (fusion always runs first). */
  passes?: readonly PreparePass[] | ((defaults: readonly PreparePass[]) => readonly PreparePass[]);
  /** Receives warnings (default: console.warn). */
  onWarning?: (message: string) => void;
  /** Skip fuseFx (the model is already fused, or fusion is not wanted). */
  fuse?: boolean;
  /**
   * Put a QuantStub after every graph input (for graphs without one, e.g. ONNX imports); with a
   * `scale`, a fixed-scale stub (1/128 suits inputs in [-1, 1]).
   */
  inputQuantStubs?: boolean | { scale?: number };
  /**
   * Put a DeQuantStub before every graph output not already computed by one, so the converted model
   * returns float tensors like the float model (PyTorch's convert_fx does the same); default: on when
   * `inputQuantStubs` is. false keeps the outputs quantized (`QTensor`: integers and scale), for tools
   * that deploy or compare the integers.
   */
  outputDeQuantStubs?: boolean;
  /**
   * Heterogeneous model: nodes the march cannot run (by its capability table) and those `hybridDict`
   * names stay float on the CPU, with quantize / dequantize where they meet BPU nodes. Needs the
   * `partitioner` that decides each node's device.
   */
  hybrid?: boolean;
  /**
   * With `hybrid`: the pass that decides each node's device, run right after the march's rewrites;
   * `hybridPartitioner` from @qtk/hybrid: `{ hybrid: true, partitioner: hybridPartitioner }`.
   */
  partitioner?: PreparePass;
  /** With `hybrid`: modules to keep on the CPU, by type and by name (generated names such as `_generated_add_0` too). */
  hybridDict?: HybridDict;
  /**
   * Run the march's graph optimizations (horizon_plugin_pytorch's `optimize_graph`, its `optimizeGraphPasses`),
   * such as a march whose cat copies its inputs tying their scales to the cat's from prepare on, so QAT trains
   * with the scales the deployed cat has. A march without any warns that the option has no effect. Default false.
   */
  optimizeGraph?: boolean;
}

/**
 * prepareQatFx's options-only form (horizon_plugin_pytorch's `prepare(model, qconfig_setter=...)`):
 * the setters choose every node's qconfig on the fused graph, in order, later ones overriding.
 */
export interface PrepareQatFxSetterOptions extends PrepareQatFxOptions {
  /** Applied in order on the fused graph; built-in templates (defaultQconfigSetter, ...) and your own functions mix. */
  qconfigSetter: readonly QconfigSetter[];
  /** One tensor per model input: what setters that need values or shapes run the model on (checked even when none does). */
  exampleInputs?: Tensor | readonly Tensor[];
  /**
   * The qconfigs the setters start from, also used by nodes the setters never see (made by later
   * passes) and modules called only inside fxWrap-ed methods; default `{ global: defaultQatQconfig }`.
   */
  qconfigDict?: QConfigDict;
}

const isSetterOptions = (x: unknown): x is PrepareQatFxSetterOptions =>
  x !== null && typeof x === 'object' && Object.hasOwn(x, 'qconfigSetter');

/** The pass list with the setters' pass before the QAT swap (after the march's rewrites and a hybrid partition). */
function withSetterPass(passes: readonly PreparePass[], run: QconfigSetterRun): readonly PreparePass[] {
  const i = passes.findIndex((p) => p.name === 'swap-qat-modules');
  const at = i < 0 ? passes.length : i;
  return [...passes.slice(0, at), qconfigSettersPass(run), ...passes.slice(at)];
}

/** The pass list with the hybrid partitioner after the march's rewrites (or first). */
function withHybridPartitioner(passes: readonly PreparePass[], partition: PreparePass): readonly PreparePass[] {
  const i = passes.findIndex((p) => p.name === 'march-rewrites') + 1;
  return [...passes.slice(0, i), partition, ...passes.slice(i)];
}

/** The partition pass hybrid mode runs (null without `hybrid`); errors for one without the other. */
function hybridPartitionerOf(options: PrepareQatFxOptions): PreparePass | null {
  const { hybrid, partitioner } = options;
  if (!hybrid) {
    if (partitioner !== undefined)
      throw new InvalidArgumentError(
        'prepareQatFx: partitioner is only run in hybrid mode; pass { hybrid: true, partitioner }',
      );
    return null;
  }
  if (partitioner === undefined)
    throw new InvalidArgumentError(
      "prepareQatFx: { hybrid: true } needs the pass that puts each node on the BPU or the CPU: import { hybridPartitioner } from '@qtk/hybrid' and pass { hybrid: true, partitioner: hybridPartitioner }",
    );
  if (partitioner === null || typeof partitioner.name !== 'string' || typeof partitioner.run !== 'function')
    throw new InvalidArgumentError(
      "prepareQatFx: partitioner must be a prepare pass { name, run(ctx) }, such as hybridPartitioner from '@qtk/hybrid'",
    );
  return partitioner;
}

/** Inserts `_generated_quant_stub_<k>` QuantStub calls after each placeholder; returns their names. */
export function insertInputQuantStubs(gm: GraphModule, scale?: number): string[] {
  const graph = gm.graph;
  const names: string[] = [];
  for (const input of graph.placeholders) {
    const name = gm.addGeneratedSubmodule('quant_stub', new QuantStub(scale !== undefined ? { scale } : {}));
    const stub = graph.insertingAfter(input, () => graph.callModule(name, [input]));
    input.replaceAllUsesWith(stub, { filter: (u) => u !== stub });
    names.push(name);
  }
  return names;
}

/** The march a prepare checks qconfigs and capabilities against: the option, else setMarch's; an error without either. */
export function requireMarch(option: PrepareQatFxOptions['march'], caller = 'prepareQatFx'): MarchBackendV1 {
  if (option !== undefined) return typeof option === 'string' ? marches.get(option) : option;
  const current = getMarch();
  if (!current) {
    const known = marches.names();
    const id = known[0] ?? 'my-march';
    throw new QConfigError(
      `${caller}: no march selected, so the qconfigs cannot be checked against a BPU's capabilities; ` +
        `call setMarch('${id}') first (registered: ${known.join(', ') || 'none; import a march package'}), ` +
        `or pass ${caller}(model, qconfigDict, { march: '${id}' })`,
    );
  }
  return current;
}

/**
 * A prepared or converted model is refused: preparing it again would keep its fake-quants in their state and ignore
 * the new qconfigs. horizon_plugin_pytorch's guides do call prepare_qat_fx on the calibrated model to start QAT;
 * in QTK that is the float model prepared with the QAT qconfig, started from the calibration (startQat).
 */
function refusePrepared(model: Module): void {
  const { kind } = modelInfoOf(model);
  if (kind !== 'qat' && kind !== 'fixed-point' && !model.namedModules().some(([, m]) => m instanceof FakeQuantize))
    return;
  throw new InvalidArgumentError(
    `prepareQatFx: the model is already ${kind === 'fixed-point' ? 'converted' : 'prepared (it has fake-quants)'}; ` +
      'prepare the float model. To start QAT from a calibration (where horizon_plugin_pytorch calls prepare_qat_fx ' +
      'on the calibrated model): const qat = prepareQatFx(floatModel, qatQconfigDict, options); ' +
      'startQat(qat, calibrated.stateDict()). QAT then starts from the calibrated scales and statistics, and a ' +
      'layer the QAT qconfigs quantize differently (an "out" qconfig) keeps its new settings',
  );
}

/**
 * Prepares a float model for calibration and QAT: traces it (unless it is a GraphModule), fuses
 * (fuseFx), resolves qconfigs (global < moduleType < moduleName < module.qconfig; ops inherit the
 * qconfig of the module that created them), swaps in QAT modules and inserts activation
 * fake-quants. Returns a new GraphModule; parameters are shared with the input model, except
 * where fusion absorbed a BatchNorm. The result records its kind ('qat') and march in `meta`.
 *
 * The options-only form `prepareQatFx(model, { march, exampleInputs, qconfigSetter: [...] })`
 * chooses qconfigs per node of the fused graph with qconfig setters (see PrepareQatFxSetterOptions).
 */
export function prepareQatFx(model: Module, options: PrepareQatFxSetterOptions): GraphModule;
export function prepareQatFx(model: Module, qconfigDict: QConfigDict, options?: PrepareQatFxOptions): GraphModule;
export function prepareQatFx(
  model: Module,
  second: QConfigDict | PrepareQatFxSetterOptions,
  options?: PrepareQatFxOptions,
): GraphModule {
  if (!(model instanceof Module)) throw new InvalidArgumentError('prepareQatFx: expected a Module or GraphModule');
  refusePrepared(model);
  if (!isSetterOptions(second)) return prepareModel(model, second, options ?? {}, null);
  if (options !== undefined)
    throw new InvalidArgumentError(
      'prepareQatFx: with qconfigSetter every option goes in the second argument: prepareQatFx(model, { march, exampleInputs, qconfigSetter })',
    );
  const { qconfigSetter, exampleInputs, qconfigDict, ...rest } = second;
  if (!Array.isArray(qconfigSetter))
    throw new InvalidArgumentError(
      'prepareQatFx: qconfigSetter must be an array of setters, e.g. [defaultQconfigSetter()]',
    );
  qconfigSetter.forEach((s, i) => {
    const ok = typeof s === 'function' || (s !== null && typeof s === 'object' && typeof s.apply === 'function');
    if (!ok)
      throw new InvalidArgumentError(
        `prepareQatFx: qconfigSetter[${i}] is neither a function (ctx) => ... nor a template ({ name, apply })`,
      );
  });
  const base = qconfigDict ?? { global: defaultQatQconfig };
  const prepareWith = (qconfigs: ReadonlyMap<string, QConfig | null>): GraphModule =>
    prepareQatFx(model, {
      ...rest,
      qconfigDict: base,
      exampleInputs,
      onWarning: () => {},
      qconfigSetter: [
        {
          name: 'fixed node qconfigs',
          apply: (ctx) => {
            for (const [name, q] of qconfigs) ctx.setQconfig(name, q);
            return undefined;
          },
        },
      ],
    });
  return prepareModel(model, base, rest, { setters: qconfigSetter, exampleInputs, prepareWith });
}

function prepareModel(
  model: Module,
  qconfigDict: QConfigDict,
  options: PrepareQatFxOptions,
  setters: (Omit<QconfigSetterRun, 'exampleInputs'> & { exampleInputs: unknown }) | null,
): GraphModule {
  const march = requireMarch(options.march);
  const traced = model instanceof GraphModule ? model : symbolicTrace(model);
  const warn = options.onWarning ?? ((m: string) => console.warn(`[qtk] ${m}`));
  if (options.hybridDict && !options.hybrid)
    throw new InvalidArgumentError(
      'prepareQatFx: hybridDict is only read in hybrid mode; pass { hybrid: true, hybridDict }',
    );
  const partitioner = hybridPartitionerOf(options);
  const exampleInputs = setters ? checkExampleInputs(setters.exampleInputs, traced) : null;
  let defaults = partitioner ? withHybridPartitioner(DEFAULT_PREPARE_PASSES, partitioner) : DEFAULT_PREPARE_PASSES;
  if (setters) defaults = withSetterPass(defaults, { ...setters, exampleInputs });
  const passes = typeof options.passes === 'function' ? options.passes(defaults) : (options.passes ?? defaults);
  if (setters && !passes.some((p) => p.name === QCONFIG_SETTERS_PASS))
    throw new InvalidArgumentError(
      `prepareQatFx: the pass list has no '${QCONFIG_SETTERS_PASS}' pass, so qconfigSetter would not run; edit the default list with passes: (defaults) => ... instead of replacing it`,
    );
  let gm: GraphModule;
  const owned = new Set<Module>();
  if (options.fuse === false) {
    gm = new GraphModule(traced, traced.graph.clone().graph, { className: traced.className });
    moduleizeFunctionalOps(gm, owned);
  } else {
    gm = fuseFx(traced, { march });
  }
  if (options.inputQuantStubs) {
    insertInputQuantStubs(gm, typeof options.inputQuantStubs === 'object' ? options.inputQuantStubs.scale : undefined);
  }
  if (options.outputDeQuantStubs ?? Boolean(options.inputQuantStubs)) insertOutputDeQuantStubs(gm);
  const ctx = createPrepareContext({
    gm,
    input: model,
    source: traced,
    qconfigDict,
    march,
    owned,
    warn,
    hybrid: options.hybrid ? { dict: options.hybridDict ?? {} } : null,
    optimizeGraph: options.optimizeGraph === true,
  });
  if (options.optimizeGraph && !march.hooks.optimizeGraphPasses?.length)
    warn(`prepareQatFx: march '${march.id}' has no graph optimizations, so optimizeGraph changes nothing`);
  for (const pass of passes) pass.run(ctx);
  checkModuleNames('qconfigDict.moduleName', Object.keys(moduleNameRecord(qconfigDict)), [traced, gm]);
  gm.recompile();
  recordModelInfo(gm, { kind: 'qat', march: march.id });
  // convertFx runs a BPU op it then cannot convert on the CPU instead (the hybrid guarantee)
  if (options.hybrid) gm.meta = { ...gm.meta, [HYBRID_MODEL]: true };
  return gm;
}
