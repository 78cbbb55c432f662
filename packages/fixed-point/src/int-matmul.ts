import { broadcastShapes, run1, ShapeError, type Tensor, type TypedArray } from '@qtk/tensor';
import {
  dtypeMaxAbs,
  EXACT_F32_SUM,
  f32Tensor,
  int32Tensor,
  partMaxima,
  partScales,
  partValue,
  planChunks,
  planCost,
  requireIntInput,
  saturateInt32,
  unitMaxima,
} from './exact-sum.js';

// Exact integer matrix products on the float32 GEMM. A float32 sum of integer products is exact
// while every partial sum stays within 2^24; the reduction is cut into chunks whose bound on
// Σ|terms| per output stays within it, int16 operands may be split into a signed high byte and an
// unsigned low byte (v = 256·hi + lo), and the chunks are added in float64 and saturated to int32.
// The helpers (bounds, chunk plans, the byte split, saturation) are in exact-sum.ts.

/** Columns [k0, k1) of v [batch, rows, K], each part stacked along the rows: [batch, parts·rows, k1−k0]. */
function rowsStacked(
  v: TypedArray,
  batch: number,
  rows: number,
  k: number,
  k0: number,
  k1: number,
  split: boolean,
): Float32Array {
  const kc = k1 - k0;
  const parts = split ? 2 : 1;
  if (!split && k0 === 0 && k1 === k) return new Float32Array(v);
  const out = new Float32Array(batch * parts * rows * kc);
  let j = 0;
  for (let b = 0; b < batch; b++) {
    for (let p = 0; p < parts; p++) {
      for (let r = 0; r < rows; r++) {
        const base = (b * rows + r) * k;
        if (!split) for (let i = k0; i < k1; i++) out[j++] = v[base + i]!;
        else if (p === 0) for (let i = k0; i < k1; i++) out[j++] = v[base + i]! >> 8;
        else for (let i = k0; i < k1; i++) out[j++] = v[base + i]! & 255;
      }
    }
  }
  return out;
}

/** Rows [k0, k1) of v [batch, K, N], each part stacked along the columns: [batch, k1−k0, parts·N]. */
function colsStacked(
  v: TypedArray,
  batch: number,
  k: number,
  n: number,
  k0: number,
  k1: number,
  split: boolean,
): Float32Array {
  const parts = split ? 2 : 1;
  if (!split && k0 === 0 && k1 === k) return new Float32Array(v);
  const out = new Float32Array(batch * (k1 - k0) * parts * n);
  let j = 0;
  for (let b = 0; b < batch; b++) {
    for (let i = k0; i < k1; i++) {
      const base = (b * k + i) * n;
      for (let p = 0; p < parts; p++) for (let c = 0; c < n; c++) out[j++] = partValue(v[base + c]!, split, p);
    }
  }
  return out;
}

interface ReductionPlan {
  splitA: boolean;
  splitB: boolean;
  ends: number[];
}

/**
 * Chooses how to split the operands and where to cut a K-long reduction whose output bound is
 * Σ_k maxA[k]·maxB[k]. The dtype's worst case is tried first so that the usual int8 product
 * needs no scan of the data.
 */
function planReduction(
  a: { v: TypedArray; dtype: string; outer: number; inner: number },
  b: { v: TypedArray; dtype: string; outer: number; inner: number },
  k: number,
  bRowsOf?: () => Float64Array[],
): ReductionPlan {
  const whole = { splitA: false, splitB: false, ends: [k] };
  if (k * dtypeMaxAbs(b.dtype) * dtypeMaxAbs(a.dtype) <= EXACT_F32_SUM) return whole;
  // only now read a constant operand's rows (a linear weight's |w|: 0.5M values for a 512 → 1000 layer, per call)
  const bRows = bRowsOf?.();
  if (bRows && Math.max(...bRows.map((row) => row.reduce((p, v) => p + v, 0))) * dtypeMaxAbs(a.dtype) <= EXACT_F32_SUM)
    return whole;
  const ma = unitMaxima(a.v, a.outer, k, a.inner, a.dtype === 'int16');
  const mb = unitMaxima(b.v, b.outer, k, b.inner, b.dtype === 'int16');
  // A constant int8 operand (a linear weight) bounds each output by its own row: |w[o, k]|.
  const bParts = (splitB: boolean) => (bRows && !splitB ? bRows : partMaxima(mb, splitB));
  let best: ReductionPlan | null = null;
  let bestCost = Infinity;
  for (const splitA of a.dtype === 'int16' ? [false, true] : [false]) {
    for (const splitB of b.dtype === 'int16' ? [false, true] : [false]) {
      const rows: Float64Array[] = [];
      for (const pa of partMaxima(ma, splitA)) {
        for (const pb of bParts(splitB)) rows.push(pa.map((x, i) => x * pb[i]!));
      }
      const ends = planChunks(rows, k);
      if (!ends) continue;
      const cost = planCost(rows.length, ends.length);
      if (cost < bestCost) {
        bestCost = cost;
        best = { splitA, splitB, ends };
      }
    }
  }
  // A split byte times a split byte is at most 128·255 per unit, so the full split always fits.
  return best!;
}

/**
 * Runs a planned reduction: `call(k0, k1, splitA, splitB)` returns the float32 result of one chunk
 * laid out [batch, partsA·rows, partsB·cols]; the parts and chunks are summed in float64.
 */
function runReduction(
  plan: ReductionPlan,
  batch: number,
  rows: number,
  cols: number,
  call: (k0: number, k1: number) => Float32Array,
): Int32Array {
  const { splitA, splitB, ends } = plan;
  if (!splitA && !splitB && ends.length === 1) return new Int32Array(call(0, ends[0]!)); // |y| <= 2^24
  const sa = partScales(splitA);
  const sb = partScales(splitB);
  const pcols = sb.length * cols;
  const acc = new Float64Array(batch * rows * cols);
  let k0 = 0;
  for (const k1 of ends) {
    const y = call(k0, k1);
    for (let bi = 0; bi < batch; bi++) {
      for (let pa = 0; pa < sa.length; pa++) {
        for (let r = 0; r < rows; r++) {
          const dst = (bi * rows + r) * cols;
          const srcRow = (bi * sa.length * rows + pa * rows + r) * pcols;
          for (let pb = 0; pb < sb.length; pb++) {
            const s = sa[pa]! * sb[pb]!;
            const src = srcRow + pb * cols;
            for (let c = 0; c < cols; c++) acc[dst + c] = acc[dst + c]! + s * y[src + c]!;
          }
        }
      }
    }
    k0 = k1;
  }
  return saturateInt32(acc);
}

/**
 * `y = x · wᵀ` over the last dimension of x, exact in int32 (saturating): x [..., K] int8 or int16,
 * w [Cout, K] int8 → int32 [..., Cout]. No bias (the caller adds it to the accumulator).
 */
export function intLinear(x: Tensor, w: Tensor): Tensor {
  requireIntInput('intLinear', x, 'input', true);
  requireIntInput('intLinear', w, 'weight', false);
  if (w.ndim !== 2)
    throw new ShapeError(`intLinear: weight must be 2-d [out_features, in_features], got [${w.shape.join(', ')}]`);
  const k = w.shape[1]!;
  const cout = w.shape[0]!;
  if (x.ndim === 0 || x.shape[x.ndim - 1] !== k) {
    throw new ShapeError(
      `intLinear: the input's last dimension (${x.shape[x.ndim - 1]}) must equal in_features ${k} of weight [${w.shape.join(', ')}]; input is [${x.shape.join(', ')}]`,
    );
  }
  const outShape = [...x.shape.slice(0, -1), cout];
  const rows = k === 0 ? 0 : x.size / k;
  if (rows === 0 || cout === 0 || k === 0) return int32Tensor(new Int32Array(rows * cout), outShape);
  const xv = x.values();
  const wv = w.values();
  // The weight [Cout, K] is the second operand with its K units along the inner axis.
  const wRows = () =>
    Array.from({ length: cout }, (_, o) => Float64Array.from(wv.subarray(o * k, (o + 1) * k), Math.abs));
  const plan = planReduction(
    { v: xv, dtype: x.dtype, outer: rows, inner: 1 },
    { v: wv, dtype: 'int8', outer: cout, inner: 1 },
    k,
    wRows,
  );
  const data = runReduction(plan, 1, rows, cout, (k0, k1) => {
    const kc = k1 - k0;
    const parts = plan.splitA ? 2 : 1;
    const xc = f32Tensor(rowsStacked(xv, 1, rows, k, k0, k1, plan.splitA), [parts * rows, kc]);
    const wc = f32Tensor(rowsStacked(wv, 1, cout, k, k0, k1, false), [cout, kc]);
    return run1('Linear', [xc, wc], {}).values() as Float32Array;
  });
  return int32Tensor(data, outShape);
}

/**
 * Matrix product of integer tensors with the float matmul's rules (1-d operands promoted and the
 * added dim removed, batch dims broadcast), exact in int32 (saturating). Both operands int8 or int16.
 */
export function intMatmul(a: Tensor, b: Tensor): Tensor {
  requireIntInput('intMatmul', a, 'first operand', true);
  requireIntInput('intMatmul', b, 'second operand', true);
  if (a.ndim === 0 || b.ndim === 0)
    throw new ShapeError('intMatmul: operands must have at least one dimension; multiply scalars elementwise instead');
  const as = a.ndim === 1 ? [1, a.shape[0]!] : [...a.shape];
  const bs = b.ndim === 1 ? [b.shape[0]!, 1] : [...b.shape];
  const m = as[as.length - 2]!;
  const k = as[as.length - 1]!;
  const n = bs[bs.length - 1]!;
  if (bs[bs.length - 2] !== k) {
    throw new ShapeError(
      `intMatmul: inner dimensions differ: [${a.shape.join(', ')}] @ [${b.shape.join(', ')}] (${k} vs ${bs[bs.length - 2]}); transpose or reshape an operand`,
    );
  }
  const batchA = as.slice(0, -2);
  const batchB = bs.slice(0, -2);
  let batch: number[];
  try {
    batch = [...broadcastShapes(batchA, batchB)];
  } catch {
    throw new ShapeError(
      `intMatmul: batch dimensions [${batchA.join(', ')}] and [${batchB.join(', ')}] do not broadcast (operands [${a.shape.join(', ')}] and [${b.shape.join(', ')}])`,
    );
  }
  const nb = batch.reduce((p, d) => p * d, 1);
  const nbA = batchA.reduce((p, d) => p * d, 1);
  const nbB = batchB.reduce((p, d) => p * d, 1);
  let shape = [...batch, m, n];
  if (a.ndim === 1) shape = [...batch, n];
  if (b.ndim === 1) shape = a.ndim === 1 ? [...batch] : [...batch, m];
  if (nb * m * n === 0 || k === 0) return int32Tensor(new Int32Array(nb * m * n), shape);
  const av = a.values();
  const bv = b.values();
  const plan = planReduction(
    { v: av, dtype: a.dtype, outer: nbA * m, inner: 1 },
    { v: bv, dtype: b.dtype, outer: nbB, inner: n },
    k,
  );
  const pa = plan.splitA ? 2 : 1;
  const pb = plan.splitB ? 2 : 1;
  const data = runReduction(plan, nb, m, n, (k0, k1) => {
    const kc = k1 - k0;
    const ac = f32Tensor(rowsStacked(av, nbA, m, k, k0, k1, plan.splitA), [...batchA, pa * m, kc]);
    const bc = f32Tensor(colsStacked(bv, nbB, k, n, k0, k1, plan.splitB), [...batchB, kc, pb * n]);
    return run1('MatMul', [ac, bc], {}).values() as Float32Array;
  });
  return int32Tensor(data, shape);
}
