// A tabulated nonlinear function in fixed point (march-semantics.md §1 "Nonlinear functions"):
// int8 inputs index a 256-entry table, int16 inputs a segment table. One table, or one per
// channel (PReLU's per-channel slope).
import { Module } from '@qtk/nn';
import type { QuantDType, TableOptions, ObserverDType } from '@qtk/spec';
import { DTypeError, InvalidArgumentError, Tensor } from '@qtk/tensor';
import { float32Scale, gridValue } from '../lookup-table.js';
import type { NonlinearFunction } from '../nonlinear-functions.js';
import { QTensor, STORAGE_DTYPE } from '../qtensor.js';
import { buildSegmentTable, evalSegment, type SegmentDividing, type SegmentTableV1 } from '../segment-table.js';

/** One channel's table: 256 entries for int8 inputs, a segment table for int16 inputs. */
export type TablePlan =
  | { readonly kind: 'lut'; readonly entries: Int8Array | Int16Array }
  | { readonly kind: 'segment'; readonly table: SegmentTableV1 };

/**
 * `T[i] = sat(rhu(f((i − 128)·s_in) / s_out), out)`: the spec's int8 table for qint8 output;
 * [choice] the same formula with int16 entries for qint16 output.
 */
export function buildLookupTable16(
  fn: NonlinearFunction,
  sIn: number,
  sOut: number,
  outDtype: ObserverDType,
): Int8Array | Int16Array {
  const si = float32Scale('buildLookupTable', 'sIn', sIn);
  const so = float32Scale('buildLookupTable', 'sOut', sOut);
  const t = outDtype === 'qint8' ? new Int8Array(256) : new Int16Array(256);
  for (let i = 0; i < 256; i++) {
    const x = (i - 128) * si;
    t[i] = gridValue('buildLookupTable', fn.name, x, fn.f(x) / so, outDtype);
  }
  return t;
}

/**
 * The table of `fn` for an input (qint8 → 256 entries, qint16 → segment table) and an output.
 * `tuning` (a user's table options) overrides `dividing` and restricts a segment table to an input
 * range; a 256-entry table has an exact entry per input and does not read it.
 */
export function planTable(
  fn: NonlinearFunction,
  sIn: number,
  inDtype: QuantDType,
  sOut: number,
  outDtype: QuantDType,
  dividing: SegmentDividing,
  tuning?: TableOptions,
): TablePlan {
  if (outDtype !== 'qint8' && outDtype !== 'qint16')
    throw new InvalidArgumentError(`${fn.name} table: the output must be qint8 or qint16, got ${outDtype}`);
  if (inDtype === 'qint8') return { kind: 'lut', entries: buildLookupTable16(fn, sIn, sOut, outDtype) };
  if (inDtype === 'qint16') {
    const range = tuning?.inputRange ? { inputRange: tuning.inputRange } : {};
    return {
      kind: 'segment',
      table: buildSegmentTable(fn, { sIn, sOut, outDtype, dividing: tuning?.dividing ?? dividing, ...range }),
    };
  }
  throw new InvalidArgumentError(`${fn.name} table: the input must be qint8 or qint16, got ${inDtype}`);
}

/** Applies a table plan to one integer. */
export function applyTablePlan(plan: TablePlan, q: number): number {
  return plan.kind === 'lut' ? plan.entries[q + 128]! : evalSegment(plan.table, q);
}

export interface FixedTableOpConfig {
  readonly label: string;
  readonly inDtype: QuantDType;
  readonly inScale: number;
  readonly outScale: number;
  readonly outDtype: QuantDType;
  /** One plan, or one per channel along `channelAxis`. */
  readonly plans: readonly TablePlan[];
  readonly channelAxis?: number;
}

/**
 * Checks that x is the input a table or composite module was planned for: a per-tensor QTensor of
 * its input dtype and scale (`built` names what was planned, in the error).
 */
export function requirePlannedInput(
  label: string,
  x: unknown,
  inDtype: QuantDType,
  inScale: number,
  built = 'built',
): asserts x is QTensor {
  if (!(x instanceof QTensor))
    throw new DTypeError(`${label} (fixed point): expected a quantized input, got ${typeof x}`);
  if (x.dtype !== inDtype || x.axis >= 0 || x.scale[0] !== inScale) {
    throw new InvalidArgumentError(
      `${label} (fixed point): ${built} for a ${inDtype} input at scale ${inScale}, got ${x.dtype} at ${x.axis >= 0 ? 'per-channel scales' : x.scale[0]}`,
    );
  }
}

/** y = table(q) elementwise; the output carries the table's output scale and dtype. */
export class FixedTableOp extends Module {
  static override readonly takesQuantizedValues = true;

  readonly config: FixedTableOpConfig;

  constructor(config: FixedTableOpConfig) {
    super();
    if (config.plans.length === 0)
      throw new InvalidArgumentError(`${config.label} (fixed point): at least one table is needed`);
    this.config = { ...config, inScale: Math.fround(config.inScale), outScale: Math.fround(config.outScale) };
  }

  forward(x: QTensor): QTensor {
    const c = this.config;
    requirePlannedInput(c.label, x, c.inDtype, c.inScale, 'the table was built');
    const v = x.ints();
    const shape = x.shape;
    const storage = STORAGE_DTYPE[c.outDtype];
    const data = storage === 'int8' ? new Int8Array(v.length) : new Int16Array(v.length);
    const plans = c.plans;
    if (plans.length === 1) {
      const p = plans[0]!;
      if (p.kind === 'lut') for (let i = 0; i < v.length; i++) data[i] = p.entries[v[i]! + 128]!;
      else for (let i = 0; i < v.length; i++) data[i] = evalSegment(p.table, v[i]!);
    } else {
      const axis = c.channelAxis ?? 1;
      if (shape[axis] !== plans.length)
        throw new InvalidArgumentError(
          `${c.label} (fixed point): ${plans.length} per-channel tables for ${shape[axis]} channels along axis ${axis}`,
        );
      let inner = 1;
      for (let d = axis + 1; d < shape.length; d++) inner *= shape[d]!;
      for (let i = 0; i < v.length; i++) data[i] = applyTablePlan(plans[Math.floor(i / inner) % plans.length]!, v[i]!);
    }
    return new QTensor(new Tensor({ data, shape: [...shape], dtype: storage }), [c.outScale], c.outDtype);
  }

  override extraRepr(): string {
    const c = this.config;
    return `${c.label}, ${c.inDtype} → ${c.outDtype}, ${c.plans[0]!.kind === 'lut' ? '256-entry table' : 'segment table'}${c.plans.length > 1 ? ` ×${c.plans.length} channels` : ''}`;
  }
}
