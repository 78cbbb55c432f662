// A segment table (int16 input) as ONNX arithmetic: the operations of @qtk/fixed-point's evalSegment
// and segmentY16 on float64 exact integers (bounds in docs/march-numerics.md, "Integer ONNX: tables,
// composites, resize"). Segment k's constants are gathered by the segment number.
import type { SegmentTableV1 } from '@qtk/fixed-point';
import { OnnxExportError, type OnnxBuilder, DataType } from '@qtk/onnx';
import {
  binary,
  cast,
  channelConst,
  channelShape,
  clip,
  doubleConst,
  doubleScalar,
  floor,
  intConstOf,
} from './int-emit.js';

const FRAC = 256;
const TOP = 63 * FRAC;
/** Segments per table: the lines 0 and 7, the tables 1..6. */
const SEGMENTS = 8;
const EXACT = 2 ** 53;

const halfOf = (r: number): number => (r === 0 ? 0 : 2 ** (r - 1));

/**
 * Per (channel, segment), channel-major: every segment starts with `v = floor((x·a + c) · inv)`,
 * a line's `shrR(x·sign·α + β, r)` (a = sign·α, c = β + 2^(r−1)) or a table's index
 * `shrR((x − B[k−1])·α, r)` (a = α, c = 2^(r−1) − B[k−1]·α): the same integers, as every term is
 * exact. `base` is where a table segment's 65 entries start in `entries`; a line reads the first
 * segment's (in bounds; Where discards it).
 */
interface SegmentParams {
  a: number[];
  c: number[];
  inv: number[];
  base: number[];
  entries: number[];
}

function paramsOf(tables: readonly SegmentTableV1[], label: string): SegmentParams {
  const p: SegmentParams = { a: [], c: [], inv: [], base: [], entries: [] };
  const push = (a: number, c: number, r: number, base: number, what: string) => {
    // |x| <= 32768 (32768 only mirrored), so |x·a + c| <= 32768·|a| + |c|
    const bound = 32768 * Math.abs(a) + Math.abs(c);
    if (!(bound < EXACT))
      throw new OnnxExportError(
        `exportOnnx: ${label}: ${what} reaches ${bound}, beyond exact float64 integers (2^53); rebuild the table with another inputRange`,
      );
    p.a.push(a);
    p.c.push(c);
    p.inv.push(2 ** -r);
    p.base.push(base);
  };
  for (const t of tables) {
    for (let s = 0; s < SEGMENTS; s++) {
      if (s === 0 || s === SEGMENTS - 1) {
        const l = t.lines[s === 0 ? 0 : 1];
        push(l.sign * l.alpha, l.beta + halfOf(l.r), l.r, 0, `segment line ${s} of ${t.function}`);
      } else {
        const { alpha, r } = t.index[s - 1]!;
        const T = t.tables[s - 1]!;
        push(alpha, halfOf(r) - t.B[s - 1]! * alpha, r, p.entries.length, `table segment ${s} of ${t.function}`);
        p.entries.push(...T, T[63]!);
      }
    }
  }
  return p;
}

/**
 * The segment number #{k in 0..6 : x > B[k]}: 0 is x <= B[0], k is B[k−1] < x <= B[k], 7 is x > B[6].
 * B is non-decreasing, so `x > B[k]` holds exactly for k below the count, and the count's three
 * bits come from a binary search: bit 2 is x > B[3], bit 1 compares with B[5] or B[1], bit 0 with
 * B[6], B[4], B[2] or B[0]. Three comparisons per element instead of seven.
 */
function segmentNumber(
  b: OnnxBuilder,
  x: string,
  tables: readonly SegmentTableV1[],
  axis: number,
  rank: number,
  n: (what: string) => string,
): string {
  const B = (k: number) =>
    channelConst(
      b,
      tables.map((t) => t.B[k]!),
      axis,
      rank,
      n(`B${k}`),
    );
  const where = (cond: string, yes: string, no: string, what: string) => b.node('Where', [cond, yes, no], n(what))[0]!;
  const above = (t: string, what: string) => b.node('Greater', [x, t], n(what))[0]!;
  const bit = (cond: string, v: number, what: string) =>
    where(
      cond,
      intConstOf(b, [v], DataType.INT64, n(`${what}_one`), []),
      intConstOf(b, [0], DataType.INT64, n(`${what}_zero`), []),
      what,
    );
  const g4 = above(B(3), 'above_b3');
  const g2 = above(where(g4, B(5), B(1), 'b_mid'), 'above_mid');
  const low = where(g4, where(g2, B(6), B(4), 'b_hi'), where(g2, B(2), B(0), 'b_lo'), 'b_low');
  const g1 = above(low, 'above_low');
  const hi = b.node('Add', [bit(g4, 4, 'bit4'), bit(g2, 2, 'bit2')], n('bits42'))[0]!;
  return b.node('Add', [hi, bit(g1, 1, 'bit1')], n('segment'))[0]!;
}

/**
 * `evalSegment(tables[c], x)` elementwise, channel c along `axis` when there is one table per
 * channel. `x` is float64 exact integers in the int16 range (rank `rank`); the result is float64
 * exact integers in the range of the tables' output dtype.
 */
export function segmentTables(
  b: OnnxBuilder,
  x: string,
  tables: readonly SegmentTableV1[],
  axis: number,
  rank: number,
  name: string,
): string {
  const first = tables[0]!;
  if (tables.some((t) => t.version !== 1 || t.outDtype !== first.outDtype))
    throw new OnnxExportError(
      `exportOnnx: ${name}: per-channel segment tables must all be version 1 with one output dtype; rebuild them with buildSegmentTable`,
    );
  const C = tables.length;
  const p = paramsOf(tables, name);
  const n = (what: string) => `${name}_${what}`;
  const chan = C === 1 ? [] : channelShape(C, axis, rank);

  // odd functions evaluate |x| and mirror: flip = −1 where x < 0 in a channel whose function is odd
  // (x = −32768 reads 32768, on the segment-7 line)
  let flip: string | null = null;
  let xa = x;
  if (tables.some((t) => t.odd)) {
    const negative = b.node('Less', [x, doubleScalar(b, 0, n('zero'))], n('negative'))[0]!;
    const oddSign = channelConst(
      b,
      tables.map((t) => (t.odd ? -1 : 1)),
      axis,
      rank,
      n('odd_sign'),
    );
    flip = b.node('Where', [negative, oddSign, doubleScalar(b, 1, n('plus1'))], n('flip'))[0]!;
    xa = binary(b, 'Mul', x, flip, n('abs'));
  }

  const count = segmentNumber(b, xa, tables, axis, rank, n);
  const isLine = b.node(
    'Or',
    [
      b.node('Equal', [count, intConstOf(b, [0], DataType.INT64, n('seg0'), [])], n('is_first'))[0]!,
      b.node('Equal', [count, intConstOf(b, [SEGMENTS - 1], DataType.INT64, n('seg7'), [])], n('is_last'))[0]!,
    ],
    n('is_line'),
  )[0]!;
  const offsets = Array.from({ length: C }, (_, c) => c * SEGMENTS);
  const seg =
    C === 1
      ? count
      : b.node('Add', [count, intConstOf(b, offsets, DataType.INT64, n('chan_segments'), chan)], n('segment_c'))[0]!;
  const gather = (values: number[], what: string): string =>
    b.node('Gather', [doubleConst(b, values, n(`${what}_k`)), seg], n(what), { axis: 0 })[0]!;

  // v = shrR(x·a + β', r): the line's value, or the table's unclamped index
  const v = floor(
    b,
    binary(
      b,
      'Mul',
      binary(b, 'Add', binary(b, 'Mul', xa, gather(p.a, 'a'), n('ax')), gather(p.c, 'c'), n('ax_c')),
      gather(p.inv, 'inv'),
      n('scaled'),
    ),
    n('v'),
  );

  // table segments: u = clamp(v, 0, 63·256), i = u >> 8, φ = u & 255, T[i] + shrR((T[i+1] − T[i])·φ, 8)
  const u = clip(b, v, 0, TOP, n('u'));
  const i = floor(b, binary(b, 'Mul', u, doubleScalar(b, 1 / FRAC, n('inv256')), n('u_256')), n('i'));
  const phi = binary(b, 'Sub', u, binary(b, 'Mul', i, doubleScalar(b, FRAC, n('c256')), n('i_256')), n('phi'));
  const at = cast(b, binary(b, 'Add', i, gather(p.base, 'base'), n('at_f64')), DataType.INT64, n('at'));
  const next = b.node('Add', [at, intConstOf(b, [1], DataType.INT64, n('one'), [])], n('at_next'))[0]!;
  const entries = doubleConst(b, p.entries, n('T'));
  const ti = b.node('Gather', [entries, at], n('ti'), { axis: 0 })[0]!;
  const tn = b.node('Gather', [entries, next], n('tn'), { axis: 0 })[0]!;
  const interp = floor(
    b,
    binary(
      b,
      'Mul',
      binary(
        b,
        'Add',
        binary(b, 'Mul', binary(b, 'Sub', tn, ti, n('dt')), phi, n('dt_phi')),
        doubleScalar(b, FRAC / 2, n('c128')),
        n('dt_sum'),
      ),
      doubleScalar(b, 1 / FRAC, n('inv256_b')),
      n('dt_scaled'),
    ),
    n('dt_shr'),
  );
  const tableValue = binary(b, 'Add', ti, interp, n('table'));

  let y = b.node('Where', [isLine, v, tableValue], n('y16'))[0]!;
  if (flip) y = binary(b, 'Mul', y, flip, n('y16_mirrored'));
  if (first.outDtype === 'qint16') return clip(b, y, -32768, 32767, n('out'));
  const y8 = floor(
    b,
    binary(
      b,
      'Mul',
      binary(b, 'Add', y, doubleScalar(b, FRAC / 2, n('c128_out')), n('y8_sum')),
      doubleScalar(b, 1 / FRAC, n('inv256_out')),
      n('y8_scaled'),
    ),
    n('y8'),
  );
  return clip(b, y8, -128, 127, n('out'));
}
