// FixedConv (conv, transposed conv, linear) as integer ONNX: the exact int32 sum (exact-conv-sum.ts),
// then QTK's epilogue (fixed-conv.ts convEpilogue) in float64: `+ bias` saturated to int32, `+ sumin
// term` saturated to int32, requantize by the plan, the fused ReLU / ReLU6 clamp.
import { FixedConv, intRange, type FixedConvConfig, type QTensor } from '@qtk/fixed-point';
import { OnnxExportError, type AttrValue, registerModuleExport, type ModuleExportStep } from '@qtk/onnx';
import { emitExactSum, type SumLayer } from './exact-conv-sum.js';
import { binary, channelConst, clip, floor, requantizeClamped, toDouble, toStorage } from './int-emit.js';
import { samePadding } from '@qtk/tensor';

const I32_MIN = -2147483648;
const I32_MAX = 2147483647;

const perDim = (v: number | readonly number[] | undefined, rank: number, dflt: number): number[] =>
  v === undefined
    ? new Array<number>(rank).fill(dflt)
    : typeof v === 'number'
      ? new Array<number>(rank).fill(v)
      : [...v];

/** The ONNX attributes of the layer's Conv / ConvTranspose node (as int-conv.ts reads FixedConvAttrs). */
function onnxAttrs(cfg: FixedConvConfig): Record<string, AttrValue> {
  if (cfg.kind === 'linear') return {};
  const kernel = cfg.weight.shape.slice(2);
  const r = kernel.length;
  const a = cfg.attrs as FixedConvConfig['attrs'] & { padding?: number[] | number | 'same' | 'valid' };
  const stride = perDim(a.stride, r, 1);
  const dilation = perDim(a.dilation, r, 1);
  let pads: number[];
  if (a.padding === 'valid') pads = new Array<number>(2 * r).fill(0);
  else if (a.padding === 'same') {
    pads = samePadding(kernel, dilation);
  } else {
    const p = perDim(a.padding, r, 0);
    pads = [...p, ...p];
  }
  const attrs: Record<string, AttrValue> = {
    kernel_shape: kernel,
    strides: stride,
    pads,
    dilations: dilation,
    group: a.groups ?? 1,
  };
  if (cfg.kind === 'conv_transpose') attrs.output_padding = perDim(a.outputPadding, r, 0);
  return attrs;
}

function clipInt32(s: ModuleExportStep, v: string, what: string): string {
  return clip(s.b, v, I32_MIN, I32_MAX, `${s.name}_${what}_i32`);
}

/**
 * The fused add's term per channel, `floor(e·A + H)`: A = m·2^-n, H = ½ (0 when n = 0) for a
 * rounding-shift channel (k < 0, QTK's shrR(e·m, n) = floor((e·m + 2^(n-1))·2^-n), the same value:
 * e·m < 2^46 and the exact sum are representable); A = m·2^k, H = 0 otherwise (e·m·2^k, an integer).
 */
function suminTerm(s: ModuleExportStep, cfg: FixedConvConfig, e: string, axis: number, rank: number): string {
  const { b, name } = s;
  const sm = cfg.sumin!;
  const chans = Array.from(sm.m, (_, c) => c);
  const shifts = chans.map((c) => sm.k[c]! < 0);
  const a = chans.map((c) => sm.m[c]! * 2 ** (shifts[c] ? -sm.n[c]! : sm.k[c]!));
  const h = chans.map((c) => (shifts[c] && sm.n[c]! > 0 ? 0.5 : 0));
  const t = binary(b, 'Mul', e, channelConst(b, a, axis, rank, `${name}_sumin_m`), `${name}_sumin_mul`);
  if (h.every((v) => v === 0)) return t;
  const half = channelConst(b, h, axis, rank, `${name}_sumin_half`);
  return floor(b, binary(b, 'Add', t, half, `${name}_sumin_add`), `${name}_sumin`);
}

registerModuleExport(FixedConv, (s) => {
  const { b, name } = s;
  const m = s.module as FixedConv;
  const cfg = m.config;
  const x = s.args[0] as QTensor;
  const out = s.out as QTensor;
  const dtype = x.data.dtype;
  if (dtype !== 'int8' && dtype !== 'int16')
    throw new OnnxExportError(`exportOnnx: FixedConv '${s.name}' takes int8 or int16 input, got ${dtype}`);
  const rank = out.shape.length;
  if (cfg.kind !== 'linear' && rank !== cfg.weight.ndim)
    throw new OnnxExportError(
      `exportOnnx: FixedConv '${s.name}' runs on an input without a batch dimension ([${x.shape}]); export it with a batched input`,
    );
  const axis = cfg.kind === 'linear' ? rank - 1 : 1;
  const layer: SumLayer = {
    kind: cfg.kind,
    weight: cfg.weight.values() as Int8Array,
    weightShape: cfg.weight.shape,
    groups: cfg.kind === 'linear' ? 1 : (cfg.attrs.groups ?? 1),
    attrs: onnxAttrs(cfg),
    inputDtype: dtype,
    inputRank: x.shape.length,
  };
  let { acc: v, bound, withBias } = emitExactSum(b, s.inputs[0]!, layer, name, cfg.bias);
  if (cfg.bias && !withBias) {
    v = binary(b, 'Add', v, channelConst(b, cfg.bias, axis, rank, `${name}_bias`), `${name}_bias_add`);
    bound += Math.max(0, ...Array.from(cfg.bias, Math.abs));
    if (bound > I32_MAX) v = clipInt32(s, v, 'bias');
  }
  if (cfg.sumin) {
    const e = toDouble(b, s.inputs[1]!, `${name}_sumin_in`);
    v = clipInt32(s, binary(b, 'Add', v, suminTerm(s, cfg, e, axis, rank), `${name}_sumin_acc`), 'sumin');
  }
  const plan = cfg.requant;
  const range = plan ? intRange(plan.outDtype) : { min: I32_MIN, max: I32_MAX };
  const lo = cfg.activation ? Math.max(0, range.min) : range.min;
  const hi = cfg.activation === 'relu6' && plan ? Math.min(range.max, cfg.relu6Max) : range.max;
  if (plan) v = requantizeClamped(b, v, plan, axis, rank, lo, hi, `${name}_requant`);
  else if (lo !== range.min) v = clip(b, v, lo, hi, `${name}_relu`);
  return [toStorage(b, v, out.dtype, name)];
});
