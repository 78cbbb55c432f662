// profileFeaturemap: getRawFeatures plus the tables a reader starts from: the nodes that clip most,
// the widest ranges (candidates for int16), the outlier nodes and any NaN / Infinity.
import type { GraphModule } from '@qtk/ir';
import type { ModelInputs } from './model-inputs.js';
import { type NodeFeatures, type RawFeatures, type RawFeaturesOptions, getRawFeatures } from './raw-features.js';

export interface FeaturemapSummary {
  /** Quantized nodes with some clipping, most clipped first. */
  readonly bySaturation: readonly { readonly name: string; readonly saturation: number }[];
  /** Every node with finite values by max − min, widest first (horizon_plugin_pytorch's second table). */
  readonly byRange: readonly { readonly name: string; readonly range: number }[];
  /** Nodes flagged as outlier-dominated, largest abs-max / p99 first. */
  readonly outliers: readonly { readonly name: string; readonly ratio: number }[];
  /** Nodes with NaN or ±Infinity values, in execution order. */
  readonly nonFinite: readonly { readonly name: string; readonly count: number }[];
}

export interface FeaturemapProfile extends RawFeatures {
  readonly summary: FeaturemapSummary;
}

const byDescending =
  <T>(key: (t: T) => number) =>
  (a: T, b: T) =>
    key(b) - key(a);

/** The summary tables of a getRawFeatures result (ties keep execution order). */
export function summarizeFeatures(nodes: readonly NodeFeatures[]): FeaturemapSummary {
  return {
    bySaturation: nodes
      .filter((n) => n.saturation !== null && n.saturation > 0)
      .map((n) => ({ name: n.name, saturation: n.saturation! }))
      .sort(byDescending((e) => e.saturation)),
    byRange: nodes
      .filter((n) => n.min !== null && n.max !== null)
      .map((n) => ({ name: n.name, range: n.max! - n.min! }))
      .sort(byDescending((e) => e.range)),
    outliers: nodes
      .filter((n) => n.outlier.flagged)
      .map((n) => ({ name: n.name, ratio: n.outlier.ratio ?? 0 }))
      .sort(byDescending((e) => e.ratio)),
    nonFinite: nodes.filter((n) => n.nonFinite > 0).map((n) => ({ name: n.name, count: n.nonFinite })),
  };
}

/** getRawFeatures of `model` on `inputs` with its summary; JSON-serialisable. */
export function profileFeaturemap(
  model: GraphModule,
  inputs: ModelInputs,
  options: RawFeaturesOptions = {},
): FeaturemapProfile {
  const raw = getRawFeatures(model, inputs, options);
  return { ...raw, summary: summarizeFeatures(raw.nodes) };
}
