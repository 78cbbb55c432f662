// runModelProfiler: every analysis tool on two adjacent stages of a model, and the report of them all.
// modelProfiler (@qtk/profiler/node) runs it and writes the report and one JSON per tool to disk.
import { modelInfoOf, type ModelKind } from '@qtk/core';
import { checkDeployDevice, type DeployDeviceReport } from '@qtk/hybrid';
import { GraphModule, symbolicTrace } from '@qtk/ir';
import type { Module } from '@qtk/nn';
import type { RuntimeComparer } from '@qtk/onnx-deploy';
import { InvalidArgumentError, Tensor } from '@qtk/tensor';
import { checkQconfig, type CheckQconfigResult } from '../checks/check-qconfig.js';
import { checkUnfusedOperations, type UnfusedOperationsResult } from '../checks/check-unfused.js';
import { compareWeights, type CompareWeightsResult } from '../compare/compare-weights.js';
import { featuremapSimilarity, type FeaturemapSimilarityOptions } from '../compare/featuremap-similarity.js';
import { firstDivergence, type FirstDivergenceResult } from '../compare/first-divergence.js';
import { memoryProfile, type MemoryProfileResult } from '../checks/memory-profile.js';
import { argsOf, type ModelInputs } from '../values/model-inputs.js';
import { getModuleCalledCount, type ModuleCalledCountResult } from '../checks/module-called-count.js';
import { getRawFeatures, type RawFeaturesOptions } from '../values/raw-features.js';
import { profilerReportOf } from './profiler-report.js';
import type { ProfilerMode, ProfilerReport } from './report-model.js';

export interface RunModelProfilerOptions {
  /** Which stages are compared: float vs calibrated / QAT ('FvsQ'), calibrated vs QAT ('CvsQ'), QAT vs fixed point ('QvsQ'). */
  readonly mode: ProfilerMode;
  /** The float model, for the fusion and shared-module checks and the weight comparison when it is not model1. */
  readonly float?: Module;
  /** Also find the first divergence along float → fake quant → fixed point → onnxruntime (from fake quant without `float`). */
  readonly stages?: { readonly float?: GraphModule; readonly fakeQuant: GraphModule; readonly fixed: GraphModule };
  /** Skip onnxruntime in the first divergence (default: run it when there is a runtime to compare with). */
  readonly runtime?: boolean;
  /** The ONNX runtime comparison of the first divergence (see FirstDivergenceOptions; modelProfiler passes onnxruntime-node's). */
  readonly compareWithRuntime?: RuntimeComparer;
  readonly similarity?: FeaturemapSimilarityOptions;
  readonly rawFeatures?: RawFeaturesOptions;
  /** Histograms of this many worst nodes (default 6). */
  readonly histograms?: number;
  readonly title?: string;
  /** Extra header lines (model file, calibration data). */
  readonly extra?: Readonly<Record<string, string>>;
  /** Called before each tool runs. */
  readonly onProgress?: (tool: string, index: number, total: number) => void;
}

export interface ModelProfilerResults {
  readonly featuremapSimilarity: ReturnType<typeof featuremapSimilarity>;
  readonly getRawFeatures: ReturnType<typeof getRawFeatures>;
  readonly compareWeights: CompareWeightsResult | null;
  readonly checkUnfusedOperations: UnfusedOperationsResult | null;
  readonly getModuleCalledCount: ModuleCalledCountResult | null;
  readonly checkQconfig: CheckQconfigResult | null;
  readonly checkDeployDevice: DeployDeviceReport | null;
  readonly memoryProfile: MemoryProfileResult;
  readonly firstDivergence: FirstDivergenceResult | null;
}

export interface ModelProfilerRun {
  /** What profiler.html shows (renderProfilerHtml makes the page). */
  readonly report: ProfilerReport;
  /** Each tool's result, as modelProfiler writes them to `<tool>.json`. */
  readonly results: ModelProfilerResults;
}

/** The model kinds each mode compares (null: a traced float model that records no kind). */
const MODE_KINDS: Record<ProfilerMode, [readonly (ModelKind | null)[], readonly (ModelKind | null)[]]> = {
  FvsQ: [['float', null], ['qat']],
  CvsQ: [['qat'], ['qat']],
  QvsQ: [['qat'], ['fixed-point']],
};

const KIND_NAMES: Record<ProfilerMode, [string, string]> = {
  FvsQ: ['float', 'calibrated / QAT'],
  CvsQ: ['calibrated', 'QAT'],
  QvsQ: ['QAT', 'fixed point'],
};

function checkMode(mode: ProfilerMode, model1: GraphModule, model2: GraphModule): void {
  const kinds = MODE_KINDS[mode];
  if (!kinds) {
    throw new InvalidArgumentError(`modelProfiler: mode must be 'FvsQ', 'CvsQ' or 'QvsQ', got '${String(mode)}'`);
  }
  const k1 = modelInfoOf(model1).kind;
  const k2 = modelInfoOf(model2).kind;
  if (!kinds[0].includes(k1) || !kinds[1].includes(k2)) {
    throw new InvalidArgumentError(
      `modelProfiler: mode '${mode}' compares a ${KIND_NAMES[mode][0]} model with a ${KIND_NAMES[mode][1]} one, got ${k1 ?? 'float'} vs ${k2 ?? 'float'}; ` +
        'pass adjacent stages in conversion order (float → calibrated / QAT → fixed point), each a copy made before the next step',
    );
  }
}

/**
 * Runs the profiler's tools on two adjacent stages of a model (similarity and statistics per node, weight
 * comparison, fusion, shared-module, qconfig and deploy-device checks, memory, and with `stages` the first
 * divergence) and returns the report and each tool's result; it writes nothing (modelProfiler of
 * @qtk/profiler/node writes them). Neither model is changed.
 */
export async function runModelProfiler(
  model1: GraphModule,
  model2: GraphModule,
  inputs: ModelInputs,
  options: RunModelProfilerOptions,
): Promise<ModelProfilerRun> {
  const { mode } = options;
  checkMode(mode, model1, model2);
  const args = argsOf(inputs);
  const first = args[0];
  if (!(first instanceof Tensor)) throw new InvalidArgumentError('modelProfiler: inputs must be tensors');
  const floatModel = options.float ?? (mode === 'FvsQ' ? model1 : null);
  const float = floatModel === null || floatModel instanceof GraphModule ? floatModel : symbolicTrace(floatModel);
  const qat = mode === 'QvsQ' ? model1 : model2;
  const march = modelInfoOf(qat).march ?? modelInfoOf(model2).march;
  const steps = [
    'featuremapSimilarity',
    'getRawFeatures',
    'compareWeights',
    'checkUnfusedOperations',
    'getModuleCalledCount',
    'checkQconfig',
    'checkDeployDevice',
    'memoryProfile',
    'firstDivergence',
  ];
  let at = 0;
  const step = <T>(name: string, run: () => T): T => {
    options.onProgress?.(name, at++, steps.length);
    return run();
  };
  const similarity = step('featuremapSimilarity', () => featuremapSimilarity(model1, model2, args, options.similarity));
  const raw = step('getRawFeatures', () => getRawFeatures(model2, args, options.rawFeatures));
  const weights = step('compareWeights', () => (float ? compareWeights(float, model2) : null));
  const unfused = step('checkUnfusedOperations', () =>
    float ? checkUnfusedOperations(float, march ? { march } : {}) : null,
  );
  const called = step('getModuleCalledCount', () => getModuleCalledCount(float ?? model1));
  const qconfig = step('checkQconfig', () => checkQconfig(qat, march ? { march } : {}));
  const device = step('checkDeployDevice', () => checkDeployDevice(model2));
  const memory = step('memoryProfile', () => memoryProfile(model2, first.shape, { inputs: args }));
  options.onProgress?.('firstDivergence', at++, steps.length);
  const divergence = options.stages
    ? await firstDivergence(options.stages, args, {
        ...(options.runtime === false ? { onnx: null } : {}),
        ...(options.compareWithRuntime ? { compareWithRuntime: options.compareWithRuntime } : {}),
        // the pair this run already compared, unless a custom metric or no same-input mode makes it differ
        ...((options.similarity?.metric ?? 'cosine') === 'cosine' && options.similarity?.sameInput !== false
          ? {
              similarities:
                options.stages.float === model1 && options.stages.fakeQuant === model2
                  ? { floatVsFakeQuant: similarity }
                  : options.stages.fakeQuant === model1 && options.stages.fixed === model2
                    ? { fakeQuantVsFixed: similarity }
                    : {},
            }
          : {}),
        ...(options.similarity?.threshold !== undefined && options.similarity.metric === 'cosine'
          ? { threshold: options.similarity.threshold }
          : {}),
      })
    : null;
  const results: ModelProfilerResults = {
    featuremapSimilarity: similarity,
    getRawFeatures: raw,
    compareWeights: weights,
    checkUnfusedOperations: unfused,
    getModuleCalledCount: called,
    checkQconfig: qconfig,
    checkDeployDevice: device,
    memoryProfile: memory,
    firstDivergence: divergence,
  };
  const report = profilerReportOf(results, {
    mode,
    march,
    models: KIND_NAMES[mode],
    inputShapes: args.map((a) => [...(a as Tensor).shape]),
    title: options.title ?? `QTK profiler: ${KIND_NAMES[mode][0]} vs ${KIND_NAMES[mode][1]}`,
    histograms: options.histograms ?? 6,
    ...(options.extra ? { extra: options.extra } : {}),
  });
  return { report, results };
}
