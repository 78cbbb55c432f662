// modelProfiler: runModelProfiler with onnxruntime-node in the first divergence, and the report written to
// disk: profiler.html and one JSON per tool.
import type { GraphModule } from '@qtk/ir';
import { compareWithRuntime } from '@qtk/onnx-deploy/node';
import type { ModelInputs } from '../values/model-inputs.js';
import { type ModelProfilerRun, type RunModelProfilerOptions, runModelProfiler } from '../report/model-profiler.js';
import { type WrittenReport, writeProfilerReport } from './write-report.js';

export interface ModelProfilerOptions extends RunModelProfilerOptions {
  /** Where profiler.html and the tools' JSON files go; null writes nothing (default 'qtk_profiler'). */
  readonly outDir?: string | null;
}

export interface ModelProfilerResult extends ModelProfilerRun {
  /** The files written (null with `outDir: null`). */
  readonly written: WrittenReport | null;
}

/**
 * Runs the profiler's tools on two adjacent stages of a model (runModelProfiler; the first divergence compares
 * the fixed-point model with its export in onnxruntime-node when it is installed) and writes `profiler.html`
 * with one JSON file per tool to `outDir`. Neither model is changed.
 */
export async function modelProfiler(
  model1: GraphModule,
  model2: GraphModule,
  inputs: ModelInputs,
  options: ModelProfilerOptions,
): Promise<ModelProfilerResult> {
  const { outDir = 'qtk_profiler', ...rest } = options;
  const run = await runModelProfiler(model1, model2, inputs, { compareWithRuntime, ...rest });
  const toolResults = Object.fromEntries(Object.entries(run.results).filter(([, v]) => v !== null));
  const written = outDir === null ? null : await writeProfilerReport(outDir, run.report, toolResults);
  return { ...run, written };
}
