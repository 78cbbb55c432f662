// Shape vectors computed from the free batch dim (`sym` on constant values, context.ts) through the
// integer arithmetic PyTorch's exports do on them: `bsz * num_heads`, `expand(n, -1, -1)`'s Equal / Where.
import type { BatchSource, NodeContext, Val } from './context.js';

export type SymEntries = (number | null)[];

/** The entries of a constant (null where computed from the batch), or null for a value computed at run time. */
export function entriesOf(v: Val): SymEntries | null {
  if (v.kind !== 'const') return null;
  return v.sym ?? Array.from(v.t.values() as ArrayLike<number>, Number);
}

/** The batch source of the first input that has one. */
export function batchOf(...vals: Val[]): BatchSource | undefined {
  for (const v of vals) if (v.kind === 'const' && v.batch) return v.batch;
  return undefined;
}

/** `out` marked with `sym` (and the inputs' batch source) when an entry is symbolic. */
export function marked(out: Val, sym: SymEntries, from: Val[]): Val {
  if (out.kind !== 'const' || !sym.includes(null)) return out;
  const batch = batchOf(...from);
  return batch ? { ...out, sym, batch } : { ...out, sym };
}

const hasSym = (v: Val): boolean => v.kind === 'const' && !!v.sym;

/** Entry i of a broadcast operand of `n` entries (a scalar or a 1-element vector repeats). */
const at = (e: SymEntries, i: number): number | null => (e.length === 1 ? e[0]! : (e[i] ?? null));

/** Add / Sub / Mul / Div of shape vectors: an entry computed from the batch stays symbolic. */
export function markArithmetic(a: Val, b: Val, out: Val): Val {
  if (out.kind !== 'const' || out.t.ndim > 1 || !(hasSym(a) || hasSym(b))) return out;
  const [ea, eb] = [entriesOf(a)!, entriesOf(b)!];
  const sym = Array.from(out.t.values() as ArrayLike<number>, (v, i) =>
    at(ea, i) === null || at(eb, i) === null ? null : Number(v),
  );
  return marked(out, sym, [a, b]);
}

export type Comparison = 'Equal' | 'Less' | 'LessOrEqual' | 'Greater' | 'GreaterOrEqual';

/** Whether `batchEntry OP c` has the same answer for every batch ≥ 1 (a batch-proportional entry is ≥ 1). */
function constantFor(op: Comparison, c: number, batchOnLeft: boolean): boolean {
  const flipped: Record<Comparison, Comparison> = {
    Equal: 'Equal',
    Less: 'Greater',
    LessOrEqual: 'GreaterOrEqual',
    Greater: 'Less',
    GreaterOrEqual: 'LessOrEqual',
  };
  switch (batchOnLeft ? op : flipped[op]) {
    case 'Equal':
    case 'Greater':
    case 'LessOrEqual':
      return c < 1;
    case 'Less':
    case 'GreaterOrEqual':
      return c <= 1;
  }
}

/**
 * A comparison of a shape vector with constants: static where a batch ≥ 1 can never equal or cross the constant
 * (PyTorch's Equal(shape, -1) for expand's -1); elsewhere its answer would change with the batch, so the import
 * warns that the model only runs at the imported batch.
 */
export function checkComparison(ctx: NodeContext, op: Comparison, a: Val, b: Val, out: Val): Val {
  if (out.kind !== 'const' || !(hasSym(a) || hasSym(b))) return out;
  const [ea, eb] = [entriesOf(a)!, entriesOf(b)!];
  for (let i = 0; i < out.t.size; i++) {
    const [x, y] = [at(ea, i), at(eb, i)];
    if (x === null && y === null) return fixedBatch(ctx, `compares two values computed from the batch`, out);
    if (x === null && !constantFor(op, y!, true)) return fixedBatch(ctx, `compares the batch with ${y}`, out);
    if (y === null && !constantFor(op, x!, false)) return fixedBatch(ctx, `compares ${x} with the batch`, out);
  }
  return out;
}

/** Warns that `what` keeps this node from following the batch, and returns `out` as computed at import. */
export function fixedBatch<T>(ctx: NodeContext, what: string, out: T): T {
  ctx.imp.warn(
    `importOnnx: ${ctx.opType} '${ctx.name}' ${what}, which it cannot follow at run time: the model will only run at the batch it was imported with (set it with inputShapes, or the CLI's --input-shape)`,
  );
  return out;
}
