// Float modules as QTK's kernels compute them, for the float (CPU) parts of fixed-point models:
// QTK evaluates these ops on float32 inputs in float64 JS arithmetic and rounds once to float32, so
// the same float64 operations in ONNX (exact per IEEE 754, the same in every runtime) round to the
// same float32 values.
import { AdaptiveAvgPool2d, Hardsigmoid, Hardswish, ReLU } from '@qtk/nn';
import type { Tensor } from '@qtk/tensor';
import { OnnxExportError, type OnnxBuilder, registerExactFloatExport, DataType } from '@qtk/onnx';
import { binary, cast, doubleScalar, toDouble } from './int-emit.js';

function compare(b: OnnxBuilder, op: 'LessOrEqual' | 'GreaterOrEqual', x: string, v: number, name: string): string {
  return b.node(op, [x, doubleScalar(b, v, `${name}_bound`)], name)[0]!;
}

function where(b: OnnxBuilder, cond: string, yes: string, no: string, name: string): string {
  return b.node('Where', [cond, yes, no], name)[0]!;
}

/** x <= -3 ? 0 : x >= 3 ? (above) : (middle), in float64, rounded once to float32. */
function piecewise(
  b: OnnxBuilder,
  input: string,
  name: string,
  above: (x: string) => string,
  middle: (x: string) => string,
): string[] {
  const x = toDouble(b, input, name);
  const low = compare(b, 'LessOrEqual', x, -3, `${name}_low`);
  const high = compare(b, 'GreaterOrEqual', x, 3, `${name}_high`);
  const inner = where(b, high, above(x), middle(x), `${name}_upper`);
  const y = where(b, low, doubleScalar(b, 0, `${name}_zero`), inner, `${name}_f64`);
  return [cast(b, y, DataType.FLOAT, name)];
}

// hardswish: x·(x + 3) / 6 between -3 and 3 (the float64 product of two float32 values is exact).
registerExactFloatExport(Hardswish, ({ b, inputs, name }) =>
  piecewise(
    b,
    inputs[0]!,
    name,
    (x) => x,
    (x) =>
      binary(
        b,
        'Div',
        binary(b, 'Mul', x, binary(b, 'Add', x, doubleScalar(b, 3, `${name}_3`), `${name}_plus3`), `${name}_prod`),
        doubleScalar(b, 6, `${name}_6`),
        `${name}_div`,
      ),
  ),
);

// hardsigmoid: x / 6 + 0.5 between -3 and 3.
registerExactFloatExport(Hardsigmoid, ({ b, inputs, name }) =>
  piecewise(
    b,
    inputs[0]!,
    name,
    () => doubleScalar(b, 1, `${name}_one`),
    (x) =>
      binary(
        b,
        'Add',
        binary(b, 'Div', x, doubleScalar(b, 6, `${name}_6`), `${name}_div`),
        doubleScalar(b, 0.5, `${name}_half`),
        `${name}_add`,
      ),
  ),
);

// ReLU selects values: the standard op is already exact.
registerExactFloatExport(ReLU, ({ b, inputs, name }) => b.node('Relu', [inputs[0]!], name));

/**
 * Adaptive average pooling over equal windows (global pooling included): QTK sums each window in
 * float64 in row-major order, then divides by the window size. CumSum along the window (a sequential
 * running sum in onnxruntime) adds in the same order; the last running sum is the window's sum.
 */
registerExactFloatExport(AdaptiveAvgPool2d, ({ b, inputs, name, args, out, path }) => {
  const x = args[0] as Tensor;
  const y = out as Tensor;
  if (x.ndim !== 4)
    throw new OnnxExportError(
      `exportOnnx: AdaptiveAvgPool2d '${path}' exports for [N, C, H, W] inputs, got rank ${x.ndim}`,
    );
  const [h, w] = [x.shape[2]!, x.shape[3]!];
  const [oh, ow] = [y.shape[2]!, y.shape[3]!];
  if (h % oh !== 0 || w % ow !== 0)
    throw new OnnxExportError(
      `exportOnnx: AdaptiveAvgPool2d '${path}' from ${h}x${w} to ${oh}x${ow} has windows of unequal size, which have no exact ONNX form yet`,
    );
  const [kh, kw] = [h / oh, w / ow];
  const c = x.shape[1]!;
  const d = toDouble(b, inputs[0]!, name);
  const split = b.node('Reshape', [d, b.intConst([0, c, oh, kh, ow, kw], `${name}_windows`)], `${name}_split`)[0]!;
  const grouped = b.node('Transpose', [split], `${name}_group`, { perm: [0, 1, 2, 4, 3, 5] })[0]!;
  const flat = b.node(
    'Reshape',
    [grouped, b.intConst([0, c, oh, ow, kh * kw], `${name}_flat_shape`)],
    `${name}_flat`,
  )[0]!;
  const axis = b.intConst([4], `${name}_axis`, []);
  const running = b.node('CumSum', [flat, axis], `${name}_cumsum`)[0]!;
  const last = b.node('Gather', [running, b.intConst([kh * kw - 1], `${name}_last`, [])], `${name}_sum`, {
    axis: 4,
  })[0]!;
  const mean = binary(b, 'Div', last, doubleScalar(b, kh * kw, `${name}_count`), `${name}_mean`);
  return [cast(b, mean, DataType.FLOAT, name)];
});
