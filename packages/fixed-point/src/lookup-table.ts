// The int8 → int8 256-entry table of march-semantics.md §1 (both marches).
import { InvalidArgumentError } from '@qtk/tensor';
import { rhu, sat } from './integer-math.js';
import type { NonlinearFunction } from './nonlinear-functions.js';
import type { ObserverDType } from '@qtk/spec';

/** A positive finite scale as float32 (scales are float32; derived integers are computed in float64). */
export function float32Scale(op: string, what: string, s: number): number {
  const v = Math.fround(s);
  if (!(Number.isFinite(v) && v > 0))
    throw new InvalidArgumentError(`${op}: ${what} must be a positive finite float32 scale, got ${s}`);
  return v;
}

/**
 * Rounds and saturates a real value on an output grid: `sat(rhu(v), dt)`, with ±Infinity going to
 * the dtype's max/min. NaN means the function is undefined there, which the catalogue never returns.
 */
export function gridValue(op: string, fname: string, x: number, v: number, dtype: ObserverDType): number {
  if (Number.isNaN(v))
    throw new InvalidArgumentError(
      `${op}: ${fname}(${x}) is NaN; define the function outside its domain (see nonlinear-functions.ts)`,
    );
  return sat(rhu(v), dtype);
}

/** `T[i] = sat(rhu(f((i − 128)·s_in) / s_out), qint8)` for i in 0..255. */
export function buildLookupTable(fn: NonlinearFunction, sIn: number, sOut: number): Int8Array {
  const si = float32Scale('buildLookupTable', 'sIn', sIn);
  const so = float32Scale('buildLookupTable', 'sOut', sOut);
  const t = new Int8Array(256);
  for (let i = 0; i < 256; i++) {
    const x = (i - 128) * si;
    t[i] = gridValue('buildLookupTable', fn.name, x, fn.f(x) / so, 'qint8');
  }
  return t;
}

/** `y = T[q + 128]` elementwise. */
export function applyLookupTable(table: Int8Array, q: Int8Array): Int8Array {
  if (table.length !== 256)
    throw new InvalidArgumentError(`applyLookupTable: a table has 256 entries, got ${table.length}`);
  const out = new Int8Array(q.length);
  for (let i = 0; i < q.length; i++) out[i] = table[q[i]! + 128]!;
  return out;
}
