// A segment table (int16 input) as ONNX arithmetic, the operations of @qtk/fixed-point's evalSegment
// and segmentY16 in their order. Every value is a float64 exact integer (bounds in docs/march-numerics.md,
// "Integer ONNX: tables, composites, resize"); the per-segment constants are gathered by segment number.
import type { SegmentTableV1 } from '@qtk/fixed-point';
import { OnnxExportError } from '../errors.js';
import type { OnnxBuilder } from '../export-builder.js';
import { DataType } from '../onnx-schema.js';
import { reduce, unsqueeze } from './axis-emit.js';
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

/** The gathered table starts with two zeros, read by the line segments (their table term is 0), then
 * each table segment's T[0..63] and T[64] := T[63]. */
const LEADING_ZEROS = 2;
const FRAC = 256;
const TOP = 63 * FRAC;
/** Segments per table: the lines 0 and 7, the tables 1..6. */
const SEGMENTS = 8;
const EXACT = 2 ** 53;

const halfOf = (r: number): number => (r === 0 ? 0 : 2 ** (r - 1));

interface SegmentParams {
  /** Line segments: y = floor((x·lineA + lineC) · lineInv); 0 on table segments. */
  lineA: number[];
  lineC: number[];
  lineInv: number[];
  /** Table segments: u = clamp(floor(((x − tabB)·tabA + tabHalf) · tabInv), 0, 63·256); 0 on lines. */
  tabB: number[];
  tabA: number[];
  tabHalf: number[];
  tabInv: number[];
  /** Where segment k's 65 entries start in the gathered table (the zeros for lines). */
  tabBase: number[];
  entries: number[];
}

/** The constants of every (channel, segment), segment-major within a channel, and the gathered table. */
function paramsOf(tables: readonly SegmentTableV1[], label: string): SegmentParams {
  const p: SegmentParams = {
    lineA: [],
    lineC: [],
    lineInv: [],
    tabB: [],
    tabA: [],
    tabHalf: [],
    tabInv: [],
    tabBase: [],
    entries: new Array<number>(LEADING_ZEROS).fill(0),
  };
  for (const t of tables) {
    for (let s = 0; s < SEGMENTS; s++) {
      if (s === 0 || s === SEGMENTS - 1) {
        const l = t.lines[s === 0 ? 0 : 1];
        // |x·α| <= 32768·(2^15 − 1) and |β| come from buildSegmentTable; the sum must stay exact
        const bound = 32768 * l.alpha + Math.abs(l.beta) + halfOf(l.r);
        if (!(bound < EXACT))
          throw new OnnxExportError(
            `exportOnnx: ${label}: segment line ${s} of ${t.function} reaches ${bound}, beyond exact float64 integers (2^53); rebuild the table with another inputRange`,
          );
        p.lineA.push(l.sign * l.alpha);
        p.lineC.push(l.beta + halfOf(l.r));
        p.lineInv.push(2 ** -l.r);
        p.tabB.push(0);
        p.tabA.push(0);
        p.tabHalf.push(0);
        p.tabInv.push(1);
        p.tabBase.push(0);
      } else {
        const { alpha, r } = t.index[s - 1]!;
        const T = t.tables[s - 1]!;
        p.lineA.push(0);
        p.lineC.push(0);
        p.lineInv.push(1);
        p.tabB.push(t.B[s - 1]!);
        p.tabA.push(alpha);
        p.tabHalf.push(halfOf(r));
        p.tabInv.push(2 ** -r);
        p.tabBase.push(p.entries.length);
        p.entries.push(...T, T[63]!);
      }
    }
  }
  return p;
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

  // segment number = #{k in 0..6 : x > B[k]} (B non-decreasing: 0 is x <= B[0], k is B[k−1] < x <= B[k], 7 is x > B[6])
  const chan = C === 1 ? [] : channelShape(C, axis, rank);
  const points = doubleConst(
    b,
    tables.flatMap((t) => t.B.slice(0, 7)),
    n('B'),
    [...chan, 7],
  );
  const above = b.node('Greater', [unsqueeze(b, xa, [rank], n('x_col')), points], n('above'))[0]!;
  let seg = reduce(b, 'ReduceSum', cast(b, above, DataType.INT64, n('above_i64')), [rank], 0, n('segment'));
  if (C > 1) {
    const offsets = Array.from({ length: C }, (_, c) => c * SEGMENTS);
    seg = b.node('Add', [seg, intConstOf(b, offsets, DataType.INT64, n('chan_segments'), chan)], n('segment_c'))[0]!;
  }
  const gather = (values: number[], what: string): string =>
    b.node('Gather', [doubleConst(b, values, n(`${what}_k`)), seg], n(what), { axis: 0 })[0]!;

  // line segments 0 and 7: shrR(x·sign·α + β, r)
  const lineVal = floor(
    b,
    binary(
      b,
      'Mul',
      binary(
        b,
        'Add',
        binary(b, 'Mul', xa, gather(p.lineA, 'line_a'), n('line_ax')),
        gather(p.lineC, 'line_c'),
        n('line_sum'),
      ),
      gather(p.lineInv, 'line_inv'),
      n('line_scaled'),
    ),
    n('line'),
  );

  // table segments: u = clamp(shrR((x − B[k−1])·α, r), 0, 63·256), i = u >> 8, φ = u & 255
  const dx = binary(b, 'Sub', xa, gather(p.tabB, 'tab_b'), n('dx'));
  const ax = binary(b, 'Mul', dx, gather(p.tabA, 'tab_a'), n('dx_a'));
  const u0 = floor(
    b,
    binary(
      b,
      'Mul',
      binary(b, 'Add', ax, gather(p.tabHalf, 'tab_half'), n('u_sum')),
      gather(p.tabInv, 'tab_inv'),
      n('u_scaled'),
    ),
    n('u_raw'),
  );
  const u = clip(b, u0, 0, TOP, n('u'));
  const i = floor(b, binary(b, 'Mul', u, doubleScalar(b, 1 / FRAC, n('inv256')), n('u_256')), n('i'));
  const phi = binary(b, 'Sub', u, binary(b, 'Mul', i, doubleScalar(b, FRAC, n('c256')), n('i_256')), n('phi'));
  const at = cast(b, binary(b, 'Add', i, gather(p.tabBase, 'tab_base'), n('at_f64')), DataType.INT64, n('at'));
  const next = b.node('Add', [at, intConstOf(b, [1], DataType.INT64, n('one'), [])], n('at_next'))[0]!;
  const entries = doubleConst(b, p.entries, n('T'));
  const ti = b.node('Gather', [entries, at], n('ti'), { axis: 0 })[0]!;
  const tn = b.node('Gather', [entries, next], n('tn'), { axis: 0 })[0]!;
  // ti + shrR((tn − ti)·φ, 8)
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
  const tabVal = binary(b, 'Add', ti, interp, n('table'));

  // one of the two terms is 0: the line's constants are 0 on table segments, the table reads zeros on lines
  let y = binary(b, 'Add', lineVal, tabVal, n('y16'));
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
