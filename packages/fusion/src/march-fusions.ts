// Which fusions a march can run, read from its capability table: the base op must be in the table
// and every op fused into it listed in the base's `fusable`. Absorbing a BatchNorm is allowed
// whenever the base is: it rewrites float weights before quantization (march-semantics.md §3,
// step 1), so the march only ever sees the conv it produces.
import type { Match, RewriteContext } from '@qtk/ir';
import type { CapabilityTable, FusedOps, FusionPatternV1, MarchBackendV1 } from '@qtk/spec';

/** Ops a march accepts fused into any base whatever its table says (float rewrites it never sees). */
export const ALWAYS_FUSABLE: readonly string[] = ['BatchNormalization'];

/** Why `table` cannot run this fusion, or null when it can. */
export function fusionRefusal(table: CapabilityTable, ops: FusedOps): string | null {
  const cap = table.ops.find((o) => o.op === ops.base);
  if (!cap) return `'${ops.base}' is not in the capability table`;
  const allowed = cap.fusable ?? [];
  const refused = ops.fused.filter((op) => !ALWAYS_FUSABLE.includes(op) && !allowed.includes(op));
  return refused.length ? `'${ops.base}' does not list ${refused.map((o) => `'${o}'`).join(', ')} as fusable` : null;
}

/**
 * The pattern with its `when` narrowed to the matches `march` can run (fusedOps checked against the
 * table); a pattern without `fusedOps` is returned as it is.
 */
export function forMarch(entry: FusionPatternV1, march: MarchBackendV1): FusionPatternV1 {
  const fusedOps = entry.fusedOps;
  if (!fusedOps) return entry;
  const table = march.capabilities;
  const when = (match: Match, ctx: RewriteContext): boolean =>
    fusionRefusal(table, fusedOps.call(entry, match, ctx)) === null && (entry.when?.(match, ctx) ?? true);
  return Object.assign(Object.create(entry) as FusionPatternV1, { when });
}
