// Test inputs for the integer export: float tensors whose quantized integers are chosen exactly
// (every int8 pair, both ends of the range, rounding ties), and the module kinds of a fixed model.
import { Quantize } from '@qtk/fixed-point';
import type { GraphModule } from '@qtk/ir';
import { Generator, InvalidArgumentError, Tensor } from '@qtk/tensor';
import { type ObserverDType, quantRange } from '@qtk/spec';

/** The float input that the Quantize module `stub` of `fixed` turns into exactly `ints`. */
export function onGrid(fixed: GraphModule, stub: string, ints: ArrayLike<number>, shape: number[]): Tensor {
  const q = fixed.getSubmodule(stub);
  if (!(q instanceof Quantize))
    throw new InvalidArgumentError(`onGrid: '${stub}' is a ${q.constructor.name}; name a Quantize module`);
  return new Tensor({ data: Float32Array.from(ints, (k) => k * q.scale), shape, dtype: 'float32' });
}

/**
 * `n` integers spanning a dtype's range: for qint8 n = 256 is every value in order; for qint16 the
 * ends, zero, ±1 and evenly spread values with seeded jitter.
 */
export function rangeInts(dtype: ObserverDType, n: number, seed = 1): Int32Array {
  const out = new Int32Array(n);
  if (dtype === 'qint8' && n === 256) {
    for (let i = 0; i < n; i++) out[i] = i - 128;
    return out;
  }
  const { quantMin: lo, quantMax: hi } = quantRange(dtype);
  const g = new Generator(seed);
  for (let i = 0; i < n; i++) {
    const base = lo + Math.floor(((hi - lo) * i) / (n - 1));
    out[i] = Math.max(lo, Math.min(hi, base + Math.floor((g.uniform() - 0.5) * 16)));
  }
  out.set([lo, hi, 0, 1, -1].slice(0, n), 0);
  return out;
}

/** Rows `a` × columns `b` of a [1, 1, a.length, b.length] grid: element (i, j) pairs a[i] with b[j]. */
export function pairGrid(a: ArrayLike<number>, b: ArrayLike<number>): { rows: Int32Array; cols: Int32Array } {
  const rows = new Int32Array(a.length * b.length);
  const cols = new Int32Array(a.length * b.length);
  for (let i = 0; i < a.length; i++)
    for (let j = 0; j < b.length; j++) {
      rows[i * b.length + j] = a[i]!;
      cols[i * b.length + j] = b[j]!;
    }
  return { rows, cols };
}

/** The module class of every call_module node, in graph order. */
export function moduleKinds(fixed: GraphModule): string[] {
  return fixed.graph.nodes
    .filter((n) => n.op === 'call_module')
    .map((n) => fixed.getSubmodule(n.target).constructor.name);
}

/** The marches and activation dtypes an integer rule is tested on (bernoulli2 has no int16 activations). */
export const MARCH_DTYPES = [
  { march: 'bayes', dtype: 'qint8' },
  { march: 'bayes', dtype: 'qint16' },
  { march: 'bernoulli2', dtype: 'qint8' },
] as const;
