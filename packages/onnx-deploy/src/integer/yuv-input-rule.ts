// Integer ONNX of YuvInputQuantize (march-numerics.md, "YUV input"): the centered YUV bytes (int8
// [N, 3, H, W]) to double, one slice per input channel, acc = Y·w_Y + U·w_U + V·w_V + bias with the
// weights per output channel ([1, 3, 1, 1] constants), acc · 2^-shift, the replaced Quantize's
// rounding (Floor(v + 1/2) for half up, Round for half even), per-channel Min / Max, cast to the storage type.
// Every product is an int8 times an int32 (< 2^38) and every sum below 2^40, so all of it is exact in double.
import { YuvInputQuantize } from '@qtk/fixed-point';
import { OnnxExportError, registerModuleExport, type ModuleExportStep } from '@qtk/onnx';
import { binary, doubleConst, doubleScalar, floor, toDouble, toStorage } from './int-emit.js';

function perOutputChannel(b: ModuleExportStep['b'], values: ArrayLike<number>, name: string): string {
  return doubleConst(b, values, name, [1, 3, 1, 1]);
}

export function exportYuvInputQuantize(step: ModuleExportStep): string[] {
  const m = step.module as YuvInputQuantize;
  const { b, name } = step;
  const input = step.inputs[0];
  if (step.inputs.length !== 1 || input === undefined)
    throw new OnnxExportError(`exportOnnx: YuvInputQuantize '${step.path}' takes one input, got ${step.inputs.length}`);
  const c = m.config;
  const x = toDouble(b, input, name);
  let acc: string | null = null;
  for (let j = 0; j < 3; j++) {
    const channel = b.node(
      'Slice',
      [
        x,
        b.intConst([j], `${name}_start${j}`),
        b.intConst([j + 1], `${name}_end${j}`),
        b.intConst([1], `${name}_axis${j}`),
      ],
      `${name}_slice${j}`,
    )[0]!;
    const w = [0, 1, 2].map((k) => c.weight[3 * k + j]!);
    const term = binary(b, 'Mul', channel, perOutputChannel(b, w, `${name}_w${j}`), `${name}_term${j}`);
    acc = acc ? binary(b, 'Add', acc, term, `${name}_acc${j}`) : term;
  }
  acc = binary(b, 'Add', acc!, perOutputChannel(b, c.bias, `${name}_bias`), `${name}_biased`);
  const scaled = binary(
    b,
    'Mul',
    acc,
    perOutputChannel(
      b,
      Array.from(c.shift, (f) => 2 ** -f),
      `${name}_inv`,
    ),
    `${name}_scaled`,
  );
  const rounded =
    c.rounding === 'half_even'
      ? b.node('Round', [scaled], `${name}_round`)[0]!
      : floor(b, binary(b, 'Add', scaled, doubleScalar(b, 0.5, `${name}_half`), `${name}_plus_half`), `${name}_round`);
  const low = b.node('Max', [rounded, perOutputChannel(b, c.min, `${name}_min`)], `${name}_at_least`)[0]!;
  const clamped = b.node('Min', [low, perOutputChannel(b, c.max, `${name}_max`)], `${name}_clamped`)[0]!;
  return [toStorage(b, clamped, c.dtype, name)];
}

registerModuleExport(YuvInputQuantize, exportYuvInputQuantize);
