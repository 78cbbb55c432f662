// @qtk/nn modules as ONNX nodes.
import {
  AdaptiveAvgPool2d,
  AvgPool2d,
  DeQuantStub,
  Dropout,
  ELU,
  Flatten,
  GELU,
  FloatFunctional,
  Hardsigmoid,
  Hardswish,
  Hardtanh,
  Identity,
  LayerNorm,
  LeakyReLU,
  Linear,
  LogSoftmax,
  MaxPool2d,
  PReLU,
  QuantStub,
  ReLU,
  ReLU6,
  SELU,
  SiLU,
  Sigmoid,
  Softmax,
  Softplus,
  Tanh,
  Upsample,
  type Module,
} from '@qtk/nn';
import { Tensor, contiguous, reshape, transpose, samePadding } from '@qtk/tensor';
import { OnnxExportError } from './errors.js';
import { BATCH_NORM_CLASSES, CONV_CLASSES, CONV_TRANSPOSE_CLASSES, isInstanceOfAny } from './layer-classes.js';
import { exportCall } from './export-functions.js';
import type { OnnxBuilder } from './export-builder.js';
import { isModelKindExported } from './export-rules.js';
import type { Argument } from '@qtk/ir';

export interface ExportStep {
  b: OnnxBuilder;
  /** ONNX names of the tensor arguments, in order. */
  inputs: string[];
  /** Example values of the arguments (tensors or plain values). */
  args: unknown[];
  /** Example output. */
  out: unknown;
  /** Base name for new nodes (the FX node name). */
  name: string;
  /** Module path (call_module), for initializer names. */
  path: string;
  /** ONNX name for a batch-preserving reshape target: 0 where the batch is copied. */
  batch: number | null;
}

export function convPads(padding: number[] | 'same' | 'valid', kernel: number[], dilation: number[]): number[] {
  if (padding === 'valid') return [...kernel.map(() => 0), ...kernel.map(() => 0)];
  if (padding === 'same') {
    return samePadding(kernel, dilation);
  }
  return [...padding, ...padding];
}

/** The initializers of a layer's weight and, when it has one, its bias, named after the module path. */
function weightAndBias(b: OnnxBuilder, m: { weight: Tensor; bias: Tensor | null }, path: string): string[] {
  const names = [b.tensor(m.weight, `${path}.weight`)];
  if (m.bias) names.push(b.tensor(m.bias, `${path}.bias`));
  return names;
}

function rankOf(x: unknown): number {
  return x instanceof Tensor ? x.ndim : 0;
}

function nextFloat32Up(v: number): number {
  const f = new Float32Array([v]);
  const u = new Uint32Array(f.buffer);
  u[0]! += 1;
  return f[0]!;
}

/** The float32 scale out/in, raised to the next float while floor(in · scale) falls short of out. */
function sizeScale(n: number, out: number): number {
  let s = Math.fround(out / n);
  while (Math.floor(Math.fround(n * s)) < out) s = nextFloat32Up(s);
  return s;
}

const FLOAT_FUNCTIONAL_CALLS: Readonly<Record<string, string>> = {
  sub: 'sub',
  div: 'div',
  addScalar: 'add',
  mulScalar: 'mul',
  matmul: 'matmul',
  sum: 'sum',
  mean: 'mean',
};

export function exportModule(m: Module, s: ExportStep, method: string | undefined): string[] {
  const { b, inputs, name, path } = s;
  const x = inputs[0]!;
  const p = (what: string) => `${path}.${what}`;
  if (method !== undefined) {
    if (!(m instanceof FloatFunctional))
      throw new OnnxExportError(
        `exportOnnx: node '${name}' calls ${m.constructor.name}.${method}, which has no ONNX form`,
      );
    switch (method) {
      case 'add':
      case 'mul':
        // as the functions: an operand that is a number (ff.mul(x, 0.5)) becomes a scalar initializer
        return exportCall(method, s, s.args as Argument[]);
      case 'addRelu':
        return b.node('Relu', b.node('Add', inputs, `${name}_add`), name);
      case 'cat':
        return b.node('Concat', inputs, name, { axis: (s.args[1] as number | undefined) ?? 0 });
      default: {
        // the methods that compute a function (a float one left on the CPU by a hybrid model) export as it
        const fn = FLOAT_FUNCTIONAL_CALLS[method];
        if (fn) return exportCall(fn, s, s.args as Argument[]);
        throw new OnnxExportError(`exportOnnx: FloatFunctional.${method} (node '${name}') has no ONNX form yet`);
      }
    }
  }
  if (isInstanceOfAny(m, CONV_CLASSES)) {
    return b.node('Conv', [x, ...weightAndBias(b, m, path)], name, {
      kernel_shape: m.kernelSize,
      strides: m.stride,
      pads: convPads(m.padding, m.kernelSize, m.dilation),
      dilations: m.dilation,
      group: m.groups,
    });
  }
  if (isInstanceOfAny(m, CONV_TRANSPOSE_CLASSES)) {
    return b.node('ConvTranspose', [x, ...weightAndBias(b, m, path)], name, {
      kernel_shape: m.kernelSize,
      strides: m.stride,
      pads: [...m.padding, ...m.padding],
      output_padding: m.outputPadding,
      dilations: m.dilation,
      group: m.groups,
    });
  }
  if (m instanceof Linear) {
    if (rankOf(s.args[0]) === 2) return b.node('Gemm', [x, ...weightAndBias(b, m, path)], name, { transB: 1 });
    const wT = contiguous(transpose(m.weight, 0, 1));
    const mm = b.node('MatMul', [x, b.tensor(wT, p('weight_t'))], m.bias ? `${name}_matmul` : name);
    return m.bias ? b.node('Add', [mm[0]!, b.tensor(m.bias, p('bias'))], name) : mm;
  }
  if (isInstanceOfAny(m, BATCH_NORM_CLASSES)) {
    if (!m.runningMean || !m.runningVar)
      throw new OnnxExportError(
        `exportOnnx: BatchNorm '${path}' tracks no running statistics; ONNX BatchNormalization needs them`,
      );
    if (m.training)
      throw new OnnxExportError(
        `exportOnnx: BatchNorm '${path}' is in training mode; call model.eval() before exporting`,
      );
    const c = m.numFeatures;
    const ones = new Tensor({ data: new Float32Array(c).fill(1), shape: [c], dtype: 'float32' });
    const zeros = new Tensor({ data: new Float32Array(c), shape: [c], dtype: 'float32' });
    const ins = [
      x,
      m.weight ? b.tensor(m.weight, p('weight')) : b.tensor(ones, p('weight')),
      m.bias ? b.tensor(m.bias, p('bias')) : b.tensor(zeros, p('bias')),
      b.tensor(m.runningMean, p('running_mean')),
      b.tensor(m.runningVar, p('running_var')),
    ];
    return b.node('BatchNormalization', ins, name, { epsilon: { float: m.eps } });
  }
  if (m instanceof ReLU) return b.node('Relu', [x], name);
  if (m instanceof ReLU6 || m instanceof Hardtanh) {
    const [lo, hi] = m instanceof ReLU6 ? [0, 6] : [m.minVal, m.maxVal];
    return b.node('Clip', [x, b.floatConst([lo], `${name}_min`, []), b.floatConst([hi], `${name}_max`, [])], name);
  }
  if (m instanceof LeakyReLU) return b.node('LeakyRelu', [x], name, { alpha: { float: m.negativeSlope } });
  if (m instanceof PReLU) {
    const w = (m as unknown as { weight: Tensor }).weight;
    const r = rankOf(s.args[0]);
    const slope =
      w.size === 1
        ? reshape(w, [1])
        : reshape(contiguous(w), [w.size, ...new Array<number>(Math.max(0, r - 2)).fill(1)]);
    return b.node('PRelu', [x, b.tensor(contiguous(slope), p('weight'))], name);
  }
  if (m instanceof Sigmoid) return b.node('Sigmoid', [x], name);
  if (m instanceof Tanh) return b.node('Tanh', [x], name);
  if (m instanceof ELU) return b.node('Elu', [x], name, { alpha: { float: m.alpha } });
  if (m instanceof SELU) return b.node('Selu', [x], name);
  if (m instanceof Softplus) {
    if (m.beta !== 1)
      throw new OnnxExportError(`exportOnnx: Softplus '${path}' has beta ${m.beta}; ONNX Softplus has beta 1`);
    return b.node('Softplus', [x], name);
  }
  if (m instanceof Hardsigmoid)
    return b.node('HardSigmoid', [x], name, { alpha: { float: 1 / 6 }, beta: { float: 0.5 } });
  if (m instanceof SiLU) return b.node('Mul', [x, b.node('Sigmoid', [x], `${name}_sigmoid`)[0]!], name);
  if (m instanceof GELU) return geluNodes(b, x, name, m.approximate);
  if (m instanceof Hardswish) {
    if (b.opset >= 14) return b.node('HardSwish', [x], name);
    const hs = b.node('HardSigmoid', [x], `${name}_hardsigmoid`, { alpha: { float: 1 / 6 }, beta: { float: 0.5 } });
    return b.node('Mul', [x, hs[0]!], name);
  }
  if (m instanceof Softmax || m instanceof LogSoftmax) {
    const op = m instanceof Softmax ? 'Softmax' : 'LogSoftmax';
    const r = rankOf(s.args[0]);
    const axis = m.dim < 0 ? m.dim + r : m.dim;
    if (b.opset < 13 && axis !== r - 1)
      throw new OnnxExportError(`exportOnnx: ${op} over a non-last axis needs opset 13 or later`, { neededOpset: 13 });
    return b.node(op, [x], name, { axis });
  }
  if (m instanceof LayerNorm) {
    if (b.opset < 17)
      throw new OnnxExportError(
        `exportOnnx: LayerNorm '${path}' needs opset 17 (LayerNormalization); pass { opset: 17 }`,
        { neededOpset: 17 },
      );
    const ns = m.normalizedShape;
    const ones = new Tensor({
      data: new Float32Array(ns.reduce((a, d) => a * d, 1)).fill(1),
      shape: ns,
      dtype: 'float32',
    });
    const ins = [x, m.weight ? b.tensor(m.weight, p('weight')) : b.tensor(ones, p('weight'))];
    if (m.bias) ins.push(b.tensor(m.bias, p('bias')));
    return b.node('LayerNormalization', ins, name, { axis: -ns.length, epsilon: { float: m.eps } });
  }
  if (m instanceof MaxPool2d) {
    return b.node('MaxPool', [x], name, {
      kernel_shape: m.kernelSize,
      strides: m.stride,
      pads: [...m.padding, ...m.padding],
      dilations: m.dilation,
      ceil_mode: m.ceilMode ? 1 : 0,
    });
  }
  if (m instanceof AvgPool2d) {
    if (m.divisorOverride !== undefined)
      throw new OnnxExportError(`exportOnnx: AvgPool2d '${path}' has a divisorOverride, which ONNX AveragePool lacks`);
    return b.node('AveragePool', [x], name, {
      kernel_shape: m.kernelSize,
      strides: m.stride,
      pads: [...m.padding, ...m.padding],
      ceil_mode: m.ceilMode ? 1 : 0,
      count_include_pad: m.countIncludePad ? 1 : 0,
    });
  }
  if (m instanceof AdaptiveAvgPool2d) {
    const input = s.args[0] as Tensor;
    const out = s.out as Tensor;
    const [h, w] = [input.shape[input.ndim - 2]!, input.shape[input.ndim - 1]!];
    const [oh, ow] = [out.shape[out.ndim - 2]!, out.shape[out.ndim - 1]!];
    if (oh === 1 && ow === 1) return b.node('GlobalAveragePool', [x], name);
    if (h % oh !== 0 || w % ow !== 0)
      throw new OnnxExportError(
        `exportOnnx: AdaptiveAvgPool2d '${path}' from ${h}x${w} to ${oh}x${ow} is not a plain average pool`,
      );
    return b.node('AveragePool', [x], name, { kernel_shape: [h / oh, w / ow], strides: [h / oh, w / ow] });
  }
  if (m instanceof Flatten) {
    const out = s.out as Tensor;
    const r = rankOf(s.args[0]);
    const end = m.endDim < 0 ? m.endDim + r : m.endDim;
    if (m.startDim === 1 && end === r - 1) return b.node('Flatten', [x], name, { axis: 1 });
    return b.node(
      'Reshape',
      [
        x,
        b.intConst(
          out.shape.map((d, i) => (i === 0 && m.startDim > 0 && s.batch !== null ? 0 : d)),
          `${name}_shape`,
        ),
      ],
      name,
    );
  }
  if (m instanceof Identity || m instanceof Dropout || m instanceof QuantStub || m instanceof DeQuantStub)
    return b.node('Identity', [x], name);
  if (m instanceof Upsample) {
    const input = s.args[0] as Tensor;
    const out = s.out as Tensor;
    // PyTorch maps coordinates with 1/scaleFactor when one is given, with in/out for a size: ONNX does the same
    // with the scales it is given, so write the scale factor, or out/in nudged up so that floor(in · scale) = out.
    const sf =
      m.scaleFactor === undefined
        ? null
        : typeof m.scaleFactor === 'number'
          ? [m.scaleFactor, m.scaleFactor]
          : [...m.scaleFactor];
    const scales = [1, 1, ...[2, 3].map((d, i) => (sf ? sf[i]! : sizeScale(input.shape[d]!, out.shape[d]!)))];
    const attrs =
      m.mode === 'nearest'
        ? { mode: 'nearest', coordinate_transformation_mode: 'asymmetric', nearest_mode: 'floor' }
        : { mode: 'linear', coordinate_transformation_mode: m.alignCorners ? 'align_corners' : 'half_pixel' };
    return b.node('Resize', [x, '', b.floatConst(scales, `${name}_scales`)], name, attrs);
  }
  // without @qtk/onnx-deploy, a fused, QAT or fixed-point module lands here: say where its form is
  const hint = isModelKindExported('qat')
    ? ''
    : ' (fused, QAT and fixed-point modules export through @qtk/onnx-deploy: import it before exporting)';
  throw new OnnxExportError(`exportOnnx: module '${path}' (${m.constructor.name}) has no ONNX form yet${hint}`);
}

/**
 * GELU in the ops every opset has (the Gelu op is opset 20): ½·x·(1 + erf(x/√2)), or with tanh,
 * ½·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))). The importer turns either form back into a GELU module.
 */
function geluNodes(b: OnnxBuilder, x: string, name: string, approximate: 'none' | 'tanh'): string[] {
  const c = (v: number, suffix: string) => b.floatConst([v], `${name}_${suffix}`, []);
  let inner: string;
  if (approximate === 'tanh') {
    const x3 = b.node('Mul', [b.node('Mul', [x, x], `${name}_x2`)[0]!, x], `${name}_x3`)[0]!;
    const sum = b.node('Add', [x, b.node('Mul', [x3, c(0.044715, 'c')], `${name}_cx3`)[0]!], `${name}_sum`)[0]!;
    const scaled = b.node('Mul', [sum, c(Math.sqrt(2 / Math.PI), 'k')], `${name}_scaled`)[0]!;
    inner = b.node('Tanh', [scaled], `${name}_tanh`)[0]!;
  } else {
    inner = b.node('Erf', [b.node('Div', [x, c(Math.SQRT2, 'sqrt2')], `${name}_div`)[0]!], `${name}_erf`)[0]!;
  }
  const onePlus = b.node('Add', [inner, c(1, 'one')], `${name}_one_plus`)[0]!;
  const half = b.node('Mul', [x, c(0.5, 'half')], `${name}_half`)[0]!;
  return b.node('Mul', [half, onePlus], name);
}
