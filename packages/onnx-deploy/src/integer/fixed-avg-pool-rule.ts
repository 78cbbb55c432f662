// FixedAvgPool2d as integer ONNX: the exact sum of every window as two float64 MatMuls with 0/1
// window matrices (rows, then columns; windows are rectangles whose row range depends only on the
// output row and column range only on the output column, for fixed and adaptive pooling alike),
// then each output position requantized by the plan of its window's divisor.
import { avgPoolWindowList, FixedAvgPool2d, intRange, type QTensor, type RequantizePlan } from '@qtk/fixed-point';
import { OnnxExportError, registerModuleExport } from '@qtk/onnx';
import { doubleConst, requantizeClamped, toDouble, toStorage } from './int-emit.js';

/** The module's windows, row-major over the output (as FixedAvgPool2d.forward visits them). */
function windowsOf(m: FixedAvgPool2d, H: number, W: number): ReturnType<typeof avgPoolWindowList> {
  return avgPoolWindowList(m.windows, H, W);
}

const MAX_ABS: Readonly<Record<string, number>> = { int8: 128, int16: 32768, int32: 2147483648 };

registerModuleExport(FixedAvgPool2d, ({ b, inputs, args, name, module }) => {
  const m = module as FixedAvgPool2d;
  const x = args[0] as QTensor;
  const shape = x.shape;
  const rank = shape.length;
  const H = shape[rank - 2]!;
  const W = shape[rank - 1]!;
  const { OH, OW, windows } = windowsOf(m, H, W);
  const largest = Math.max(0, ...windows.map((w) => (w.y1 - w.y0) * (w.x1 - w.x0)));
  if (!(largest * (MAX_ABS[x.data.dtype] ?? Infinity) < 2 ** 53))
    throw new OnnxExportError(
      `exportOnnx: FixedAvgPool2d '${name}': ${largest}-element windows of ${x.data.dtype} values are beyond what float64 sums exactly`,
    );
  // cols[x, ox] = 1 when column x is in output column ox's window; rowsT[oy, y] likewise for rows.
  const cols = new Float64Array(W * OW);
  const rowsT = new Float64Array(OH * H);
  for (let ox = 0; ox < OW; ox++) {
    const w = windows[ox]!;
    for (let c = w.x0; c < w.x1; c++) cols[c * OW + ox] = 1;
  }
  for (let oy = 0; oy < OH; oy++) {
    const w = windows[oy * OW]!;
    for (let r = w.y0; r < w.y1; r++) rowsT[oy * H + r] = 1;
  }
  const xd = toDouble(b, inputs[0]!, name);
  let sums: string;
  if (OH === 1 && OW === 1 && windows[0]!.y1 - windows[0]!.y0 === H && windows[0]!.x1 - windows[0]!.x0 === W) {
    // one window over the whole map: a ReduceSum (axes an input from opset 13)
    const axes = [rank - 2, rank - 1];
    sums =
      b.opset >= 13
        ? b.node('ReduceSum', [xd, b.intConst(axes, `${name}_axes`)], `${name}_sum`, { keepdims: 1 })[0]!
        : b.node('ReduceSum', [xd], `${name}_sum`, { axes, keepdims: 1 })[0]!;
  } else {
    const byCols = b.node('MatMul', [xd, doubleConst(b, cols, `${name}_cols`, [W, OW])], `${name}_sum_cols`)[0]!;
    sums = b.node('MatMul', [doubleConst(b, rowsT, `${name}_rows`, [OH, H]), byCols], `${name}_sum`)[0]!;
  }
  // One plan per window (QTK plans once per divisor); as per-position constants along a flattened last axis.
  const plans = windows.map((w) => m.planner(x.tensorScale / w.div, m.outScale, m.outDtype));
  const plan: RequantizePlan = {
    version: 1,
    rule: plans[0]!.rule,
    outDtype: m.outDtype,
    pre: Int32Array.from(plans, (p) => p.pre[0]!),
    m: Int32Array.from(plans, (p) => p.m[0]!),
    n: Int32Array.from(plans, (p) => p.n[0]!),
  };
  const lead = new Array<number>(rank - 2).fill(0);
  const flat = b.node('Reshape', [sums, b.intConst([...lead, OH * OW], `${name}_flat_shape`)], `${name}_flat`)[0]!;
  const { min, max } = intRange(m.outDtype);
  const q = requantizeClamped(b, flat, plan, -1, rank - 1, min, max, `${name}_requant`);
  const back = b.node('Reshape', [q, b.intConst([...lead, OH, OW], `${name}_shape`)], `${name}_unflat`)[0]!;
  return [toStorage(b, back, m.outDtype, name)];
});
