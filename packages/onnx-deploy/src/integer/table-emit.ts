// Table plans (@qtk/fixed-point's applyTablePlan) as ONNX: a 256-entry table is a Gather on an int64
// index, a segment table its arithmetic (segment-emit.ts). One plan, or one per channel along an axis.
import type { SegmentTableV1, TablePlan } from '@qtk/fixed-point';
import { OnnxExportError, type OnnxBuilder, DataType } from '@qtk/onnx';
import { cast, channelShape, doubleConst, intConstOf } from './int-emit.js';
import { segmentTables } from './segment-emit.js';

/** `T_c[x + 128]` elementwise: one Gather from the channels' 256-entry tables laid end to end. */
function lookupTables(
  b: OnnxBuilder,
  x: string,
  entries: readonly ArrayLike<number>[],
  axis: number,
  rank: number,
  name: string,
): string {
  const C = entries.length;
  const offsets = Array.from({ length: C }, (_, c) => 128 + 256 * c);
  const offset =
    C === 1
      ? intConstOf(b, offsets, DataType.INT64, `${name}_offset`, [])
      : intConstOf(b, offsets, DataType.INT64, `${name}_offset`, channelShape(C, axis, rank));
  const index = b.node('Add', [cast(b, x, DataType.INT64, `${name}_i64`), offset], `${name}_index`)[0]!;
  const table = doubleConst(
    b,
    entries.flatMap((e) => Array.from(e)),
    `${name}_T`,
  );
  return b.node('Gather', [table, index], name, { axis: 0 })[0]!;
}

/**
 * `applyTablePlan(plans[c], x)` elementwise (channel c along `axis` when there is a plan per
 * channel). `x` holds exact integers in the plans' input dtype, as float64; so does the result,
 * in their output dtype.
 */
export function applyTablePlans(
  b: OnnxBuilder,
  x: string,
  plans: readonly TablePlan[],
  axis: number,
  rank: number,
  name: string,
): string {
  if (plans.every((p) => p.kind === 'lut'))
    return lookupTables(
      b,
      x,
      plans.map((p) => (p as { entries: Int8Array | Int16Array }).entries),
      axis,
      rank,
      name,
    );
  if (plans.every((p) => p.kind === 'segment'))
    return segmentTables(
      b,
      x,
      plans.map((p) => (p as { table: SegmentTableV1 }).table),
      axis,
      rank,
      name,
    );
  throw new OnnxExportError(`exportOnnx: ${name}: per-channel tables mix 256-entry and segment tables`);
}
