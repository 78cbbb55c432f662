import { Module } from '@qtk/nn';
import { DTypeError, InvalidArgumentError, Tensor, traceables } from '@qtk/tensor';
import type { QuantDType } from '@qtk/spec';
import { QTensor, STORAGE_DTYPE } from '../qtensor.js';
import { requantizeValue, type RequantizePlan } from '../requantize.js';

/** What a value-preserving op runs: a float module, a registered function, or a tensor method. */
export type ValueOpTarget =
  | { kind: 'module'; module: Module }
  | { kind: 'function'; name: string }
  | { kind: 'method'; name: string };

/**
 * The output of a value op that has its own output scale (an activation fake-quant after it):
 * the moved integers are requantized from the input scale with the march's plan (null when the
 * scales are equal), then clamped to [lo, hi] when given (ReLU6's `rhu(6 / s_out)`).
 */
export interface ValueOpOutput {
  readonly scale: number;
  readonly dtype: QuantDType;
  readonly plan: RequantizePlan | null;
  readonly clamp?: readonly [number, number];
}

function toFloat(q: QTensor): Tensor {
  const v = q.ints();
  return new Tensor({ data: Float32Array.from(v), shape: [...q.shape], dtype: 'float32' });
}

function mapArg(a: unknown, fn: (q: QTensor) => unknown): unknown {
  if (a instanceof QTensor) return fn(a);
  if (Array.isArray(a)) return a.map((x) => mapArg(x, fn));
  return a;
}

/**
 * An op that only moves or selects values (march-semantics.md §1: max-pool, relu, zero pad,
 * reshape, flatten, transpose, split, slice, pixel shuffle, nearest upsample): it runs on the
 * integers exactly (int8/int16 values are exact in float32), and the scale passes through. Every
 * quantized argument must carry the same per-tensor scale and dtype.
 */
export class FixedValueOp extends Module {
  static override readonly takesQuantizedValues = true;

  readonly target: ValueOpTarget;
  readonly label: string;

  readonly output: ValueOpOutput | null;

  constructor(target: ValueOpTarget, label?: string, output: ValueOpOutput | null = null) {
    super();
    this.target = target;
    this.output = output;
    this.label = label ?? (target.kind === 'module' ? target.module.constructor.name : target.name);
    if (target.kind === 'module') this.registerModule('module', target.module);
  }

  forward(...args: unknown[]): unknown {
    let ref: QTensor | null = null;
    const floatArgs = args.map((a) =>
      mapArg(a, (q) => {
        if (ref && (ref.dtype !== q.dtype || ref.axis !== q.axis || ref.scale.some((s, i) => s !== q.scale[i]))) {
          throw new InvalidArgumentError(
            `${this.label} (fixed point): its quantized inputs must share one scale and dtype; requantize them first`,
          );
        }
        ref ??= q;
        return toFloat(q);
      }),
    );
    if (!ref) throw new DTypeError(`${this.label} (fixed point): expected a quantized input`);
    const r: QTensor = ref;
    const t = this.target;
    let y: unknown;
    if (t.kind === 'module') y = (t.module as unknown as { call(...a: unknown[]): unknown }).call(...floatArgs);
    else if (t.kind === 'function') y = (traceables.get(t.name).fn as (...a: unknown[]) => unknown)(...floatArgs);
    else {
      const [self, ...rest] = floatArgs as [Record<string, (...a: unknown[]) => unknown>, ...unknown[]];
      if (typeof self?.[t.name] !== 'function')
        throw new InvalidArgumentError(`${this.label} (fixed point): the input has no method '${t.name}'`);
      y = self[t.name]!(...rest);
    }
    return this.requantizeResult(y, r);
  }

  private requantizeResult(y: unknown, ref: QTensor): unknown {
    if (y instanceof Tensor) {
      if (y.dtype !== 'float32') return y; // shapes, indices: not quantized values
      const storage = STORAGE_DTYPE[ref.dtype];
      let v: ArrayLike<number> = y.values();
      const o = this.output;
      if (o) {
        const plan = o.plan;
        const [lo, hi] = o.clamp ?? [-Infinity, Infinity];
        v = Float64Array.from(v, (e) => {
          const r = plan ? requantizeValue(e, plan) : e;
          return r < lo ? lo : r > hi ? hi : r;
        });
        const storage2 = STORAGE_DTYPE[o.dtype];
        const out2 = new Tensor({
          data: new (storage2 === 'int8' ? Int8Array : storage2 === 'int16' ? Int16Array : Int32Array)(v.length),
          shape: [...y.shape],
          dtype: storage2,
        });
        out2.data.set(v);
        return new QTensor(out2, [o.scale], o.dtype);
      }
      const out = new Tensor({
        data: new (storage === 'int8'
          ? Int8Array
          : storage === 'int16'
            ? Int16Array
            : storage === 'int32'
              ? Int32Array
              : Uint8Array)(v.length),
        shape: [...y.shape],
        dtype: storage,
      });
      out.data.set(v);
      return new QTensor(out, ref.scale, ref.dtype, ref.axis >= 0 && ref.axis < y.shape.length ? ref.axis : -1);
    }
    if (Array.isArray(y)) return y.map((e) => this.requantizeResult(e, ref));
    return y;
  }

  override extraRepr(): string {
    const o = this.output;
    return o ? `${this.label}, out=${o.dtype}@${o.scale}${o.clamp ? `, clamp=[${o.clamp}]` : ''}` : this.label;
  }
}
