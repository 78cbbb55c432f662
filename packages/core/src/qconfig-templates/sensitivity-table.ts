import { QConfigError } from '@qtk/spec';
import { z } from 'zod';

/**
 * One node of a sensitivity table: how much the model's output suffers when this node is
 * quantized (alone, at int8). Larger is more sensitive.
 */
export interface SensitivityEntryV1 {
  /** The node's name in the fused graph, which is its name in the model prepareQatFx returns. */
  readonly name: string;
  /**
   * Larger = more sensitive, e.g. 1 − cosine similarity of the model output, or the accuracy
   * lost; null when it could not be measured (such nodes are never picked).
   */
  readonly sensitivity: number | null;
  /** The node's op ('Conv', 'Sigmoid', ...), informative. */
  readonly op?: string | null;
  /** The module path, informative. */
  readonly path?: string;
}

/**
 * The sensitivity table `qtk sensitivity` writes and sensitivitySetter reads (JSON, version 1).
 * `nodes` is sorted most sensitive first; readers sort by `sensitivity` again, so a table edited
 * by hand still picks the largest values. Writers may add fields (to the table or to an entry,
 * e.g. the sensitivity at int16 or in float, or the budget used); readers keep and ignore them.
 */
export interface SensitivityTableV1 {
  readonly version: 1;
  /** How sensitivity was measured ('cosine', 'mse', 'accuracy', ...), informative. */
  readonly metric?: string;
  /** The march it was measured on, informative. */
  readonly march?: string;
  readonly nodes: readonly SensitivityEntryV1[];
}

const tableSchema = z
  .object({
    version: z.literal(1),
    metric: z.string().optional(),
    march: z.string().optional(),
    nodes: z.array(
      z
        .object({
          name: z.string().min(1),
          sensitivity: z.number().finite().nullable(),
          op: z.string().nullable().optional(),
          path: z.string().optional(),
        })
        .passthrough(),
    ),
  })
  .passthrough();

/** A sensitivity table that is malformed or names nodes the model does not have. */
export class SensitivityTableError extends QConfigError {
  static override readonly code: string = 'E_SENSITIVITY_TABLE';
  /** Node names in the table that the model's fused graph does not have. */
  readonly unknownNodes: readonly string[];
  constructor(message: string, unknownNodes: readonly string[] = []) {
    super(message);
    this.unknownNodes = unknownNodes;
  }
}

/** Validates a sensitivity table (e.g. parsed from `qtk sensitivity`'s JSON); SensitivityTableError lists what is wrong. */
export function checkSensitivityTable(table: unknown): SensitivityTableV1 {
  const parsed = tableSchema.safeParse(table);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${i.path.join('.') || '<table>'}: ${i.message}`);
    throw new SensitivityTableError(
      `sensitivity table: ${issues.join('; ')} (expected { version: 1, nodes: [{ name, sensitivity }] })`,
    );
  }
  const seen = new Set<string>();
  for (const n of parsed.data.nodes) {
    if (seen.has(n.name)) throw new SensitivityTableError(`sensitivity table: node '${n.name}' is listed twice`);
    seen.add(n.name);
  }
  return parsed.data;
}

/** The `k` most sensitive node names (largest sensitivity first, table order between equals; null never). */
export function mostSensitive(table: SensitivityTableV1, k: number): string[] {
  return table.nodes
    .map((n, i) => ({ n, i }))
    .filter((e) => e.n.sensitivity !== null)
    .sort((a, b) => b.n.sensitivity! - a.n.sensitivity! || a.i - b.i)
    .slice(0, k)
    .map((e) => e.n.name);
}
