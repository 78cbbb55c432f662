import { Module } from '@qtk/nn';
import type { QuantDType } from '@qtk/spec';
import { DTypeError, forEachReduced, InvalidArgumentError, normalizeAxes, reducedShape } from '@qtk/tensor';
import { requantizeInto, type RequantizePlan } from '../requantize.js';
import { QTensor } from '../qtensor.js';
import type { WindowPlanner } from './fixed-avg-pool.js';
import { requantizePlanner } from '../requantize-planners.js';
import { intStorage, qtensorOf } from './binary-operands.js';

/**
 * mean / sum over axes in fixed point (march-semantics.md §1): the exact int32 sum S of the reduced
 * elements, requantized from `s_acc = s_in / N` (mean) or `s_in` (sum). Plans are cached per (s_in, N).
 */
export class FixedReduce extends Module {
  static override readonly takesQuantizedValues = true;

  readonly kind: 'mean' | 'sum';
  readonly outScale: number;
  readonly outDtype: QuantDType;
  readonly planner: WindowPlanner;
  private readonly plans = new Map<string, RequantizePlan>();

  /** `planner`: the march's requantize planner, or the name it is registered under (requantizePlanners). */
  constructor(kind: 'mean' | 'sum', outScale: number, outDtype: QuantDType, planner: string | WindowPlanner) {
    super();
    this.kind = kind;
    this.outScale = Math.fround(outScale);
    this.outDtype = outDtype;
    this.planner = typeof planner === 'string' ? requantizePlanner(planner) : planner;
  }

  forward(x: QTensor, axes?: number | readonly number[] | null, keepdim = false): QTensor {
    if (!(x instanceof QTensor)) throw new DTypeError(`${this.kind} (fixed point): expected a quantized input`);
    if (x.axis >= 0) throw new InvalidArgumentError(`${this.kind} (fixed point): the input has a per-channel scale`);
    const shape = x.shape;
    const rank = shape.length;
    const reduced =
      axes === undefined || axes === null
        ? shape.map((_, i) => i)
        : normalizeAxes(typeof axes === 'number' ? [axes] : axes, rank, this.kind);
    const isRed = shape.map((_, i) => reduced.includes(i));
    const outShape = reducedShape(shape, reduced, keepdim);
    const outSize = outShape.reduce((p, d) => p * d, 1);
    const n = shape.reduce((p, d, i) => (isRed[i] ? p * d : p), 1);
    const v = x.ints();
    const acc = new Float64Array(outSize);
    forEachReduced(shape, reduced, (i, o) => {
      acc[o] = acc[o]! + v[i]!;
    });
    for (let i = 0; i < outSize; i++)
      acc[i] = acc[i]! < -2147483648 ? -2147483648 : acc[i]! > 2147483647 ? 2147483647 : acc[i]!;
    const sIn = x.tensorScale;
    const sAcc = this.kind === 'mean' ? sIn / n : sIn;
    const key = `${sIn}/${n}`;
    let plan = this.plans.get(key);
    if (!plan) {
      plan = this.planner(sAcc, this.outScale, this.outDtype);
      this.plans.set(key, plan);
    }
    const out = intStorage(this.outDtype, outSize) as Int8Array | Int16Array | Int32Array;
    requantizeInto(acc, plan, 1, out);
    return qtensorOf(out, outShape, this.outScale, this.outDtype);
  }

  override extraRepr(): string {
    return `${this.kind}, out=${this.outDtype}`;
  }
}
