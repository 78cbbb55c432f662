// The data profiler.html shows, independent of the tools that produced it: each tool's JSON is mapped
// into these few shapes (tables, one similarity plot, histograms, summary lines), and the page renders
// only these. Everything is plain JSON: numbers that do not exist are null, never NaN or Infinity.

/** The models a report compares: float vs calibrated / QAT, calibrated vs QAT, QAT vs fixed point. */
export type ProfilerMode = 'FvsQ' | 'CvsQ' | 'QvsQ';

export interface ReportMeta {
  /** Display names of the compared models, in comparison order (e.g. ['float', 'calibrated']). */
  readonly models?: readonly string[];
  readonly mode?: ProfilerMode;
  readonly march?: string;
  /** When the report was made (ISO 8601). */
  readonly date?: string;
  /** Shape of each model input, e.g. [[1, 3, 224, 224]]. */
  readonly inputShapes?: readonly (readonly number[])[];
  /** Anything else worth a line in the header (QTK version, model file, calibration data). */
  readonly extra?: Readonly<Record<string, string>>;
}

/** One line of the summary at the top of the page. */
export interface ReportNote {
  readonly severity: 'error' | 'warning' | 'info';
  readonly text: string;
}

/**
 * How a column's cells are shown and sorted: 'text' as is, 'number' with `digits` significant digits,
 * 'percent' a share in [0, 1] shown as a percentage. Numbers sort numerically; null sorts last both ways.
 */
export type ReportColumnKind = 'text' | 'number' | 'percent';

export interface ReportColumn {
  /** The row property this column shows. */
  readonly key: string;
  readonly label: string;
  readonly kind: ReportColumnKind;
  /** Significant digits of a number (default 5); decimals of a percent (default 2). */
  readonly digits?: number;
  /** A hover text explaining the column. */
  readonly help?: string;
}

export type ReportCell = string | number | boolean | null;
export type ReportRow = Readonly<Record<string, ReportCell>>;

export interface ReportTable {
  /** Unique among the report's tables; the HTML element ids derive from it (letters, digits, '-', '_'). */
  readonly id: string;
  readonly title: string;
  /** One or two sentences under the title: what the table is and how to read it. */
  readonly description?: string;
  readonly columns: readonly ReportColumn[];
  readonly rows: readonly ReportRow[];
  /** A boolean row property (shown or not): rows where it is true are highlighted. */
  readonly flagKey?: string;
  /** The order the table opens in (default: the rows' order). */
  readonly sort?: { readonly key: string; readonly descending?: boolean };
}

/** One point of the per-node similarity plot, in execution order. */
export interface SimilarityPoint {
  readonly name: string;
  /** The plotted metric (e.g. cosine), null where it does not exist. */
  readonly value: number | null;
  /** Maximum difference in output quantization steps, null for a float output. */
  readonly maxDiffSteps: number | null;
  /** The metric when the node is fed the first model's inputs: the error it adds rather than inherits. */
  readonly sameInput?: number | null;
  readonly flagged: boolean;
}

export interface SimilarityPlot {
  readonly title?: string;
  /** Name of the plotted metric (e.g. 'cosine'). */
  readonly metric: string;
  /** The metric's threshold, drawn as a line; null for none. */
  readonly threshold: number | null;
  readonly points: readonly SimilarityPoint[];
}

/** The distribution of one node's values: `counts[i]` values fell in [edges[i], edges[i + 1]). */
export interface ReportHistogram {
  readonly title: string;
  readonly node: string;
  readonly edges: readonly number[];
  readonly counts: readonly number[];
  /** The range the node's quantization can represent; bins outside it are drawn as clipped. */
  readonly clip?: { readonly min: number; readonly max: number } | null;
  /** A short line under the chart (e.g. 'cosine 0.83, 12 % saturated'). */
  readonly caption?: string;
}

export interface ProfilerReport {
  readonly version: 1;
  readonly title: string;
  readonly meta: ReportMeta;
  /** The most important findings first (first divergence, flagged nodes, checks that failed). */
  readonly summary: readonly ReportNote[];
  readonly similarity?: SimilarityPlot;
  /** Shown in this order, each sortable by any column. */
  readonly tables: readonly ReportTable[];
  readonly histograms: readonly ReportHistogram[];
}
