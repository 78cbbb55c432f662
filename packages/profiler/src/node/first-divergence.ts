import type { GraphModule } from '@qtk/ir';
import { compareWithRuntime } from '@qtk/onnx-deploy/node';
import {
  type FirstDivergenceOptions,
  type FirstDivergenceResult,
  firstDivergence as firstDivergenceWith,
} from '../compare/first-divergence.js';
import type { ModelInputs } from '../values/model-inputs.js';

/**
 * firstDivergence of @qtk/profiler with onnxruntime-node as the runtime of the last pair (fixed point →
 * onnxruntime); when onnxruntime-node is not installed, that pair is skipped, saying so.
 */
export function firstDivergence(
  stages: { readonly float?: GraphModule; readonly fakeQuant: GraphModule; readonly fixed: GraphModule },
  inputs: ModelInputs,
  options: FirstDivergenceOptions = {},
): Promise<FirstDivergenceResult> {
  return firstDivergenceWith(stages, inputs, { compareWithRuntime, ...options });
}
