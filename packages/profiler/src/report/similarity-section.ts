// featuremapSimilarity's result as report parts: the per-node plot and the similarity table.
import type { FeaturemapSimilarityResult } from '../compare/featuremap-similarity.js';
import type { ReportTable, SimilarityPlot } from './report-model.js';

export interface SimilaritySectionOptions {
  /** The table's id (default 'similarity'); give each compared pair its own. */
  readonly id?: string;
  /** Default 'Similarity per node'. */
  readonly title?: string;
  /** Default: how to read the table. */
  readonly description?: string;
}

/**
 * The plot (the result's metric per node, max difference in steps, flagged nodes, the threshold, and for
 * cosine the same-input cosine) and a table with every metric per node, flagged rows highlighted.
 */
export function similaritySection(
  result: FeaturemapSimilarityResult,
  options: SimilaritySectionOptions = {},
): { plot: SimilarityPlot; table: ReportTable } {
  const flagged = new Set(result.flagged);
  const metric = result.metric;
  const title = options.title ?? 'Similarity per node';
  const plot: SimilarityPlot = {
    title: `${title}: ${metric}`,
    metric,
    threshold: result.threshold,
    points: result.nodes.map((n) => ({
      name: n.name,
      value: n[metric],
      maxDiffSteps: n.maxDiffSteps,
      sameInput: metric === 'cosine' ? (n.sameInput?.cosine ?? null) : null,
      flagged: flagged.has(n.name),
    })),
  };
  const table: ReportTable = {
    id: options.id ?? 'similarity',
    title,
    description:
      options.description ??
      'In execution order. Steps: differences in units of the second model’s output scale. "Same input" runs the ' +
        'node on the first model’s inputs: the error the node adds itself rather than inherits.',
    flagKey: 'flagged',
    columns: [
      { key: 'index', label: '#', kind: 'number' },
      { key: 'name', label: 'node', kind: 'text' },
      { key: 'firstName', label: 'compared with', kind: 'text' },
      { key: 'type', label: 'type', kind: 'text' },
      { key: 'dtype', label: 'dtype', kind: 'text' },
      { key: 'scale', label: 'scale', kind: 'number', digits: 4 },
      { key: 'cosine', label: 'cosine', kind: 'number', digits: 6 },
      { key: 'sqnr', label: 'SQNR (dB)', kind: 'number', digits: 4, help: 'null: identical' },
      { key: 'mse', label: 'MSE', kind: 'number', digits: 4 },
      { key: 'l1', label: 'L1', kind: 'number', digits: 4 },
      { key: 'kl', label: 'KL', kind: 'number', digits: 4 },
      { key: 'maxAbsDiff', label: 'max |diff|', kind: 'number', digits: 4 },
      { key: 'maxDiffSteps', label: 'max diff (steps)', kind: 'number', digits: 4 },
      {
        key: 'offByMoreThanOneStep',
        label: '> 1 step',
        kind: 'percent',
        help: 'share of elements more than one step apart',
      },
      {
        key: 'clipped',
        label: 'clipped',
        kind: 'percent',
        help: "share of the first model's values beyond the range the second model's scale represents",
      },
      { key: 'sameInputCosine', label: 'cosine, same input', kind: 'number', digits: 6 },
      { key: 'sameInputSteps', label: 'max steps, same input', kind: 'number', digits: 4 },
    ],
    rows: result.nodes.map((n) => ({
      index: n.index,
      name: n.name,
      firstName: n.firstName,
      type: n.type,
      dtype: n.dtype,
      scale: n.scale,
      cosine: n.cosine,
      sqnr: n.sqnr,
      mse: n.mse,
      l1: n.l1,
      kl: n.kl,
      maxAbsDiff: n.maxAbsDiff,
      maxDiffSteps: n.maxDiffSteps,
      offByMoreThanOneStep: n.offByMoreThanOneStep,
      clipped: n.clipped,
      sameInputCosine: n.sameInput?.cosine ?? null,
      sameInputSteps: n.sameInput?.maxDiffSteps ?? null,
      flagged: flagged.has(n.name),
    })),
  };
  return { plot, table };
}
