// Conv / ConvTranspose / Linear layers and the fused conv modules written with given weight and bias
// values (a DequantizeLinear output for a fake-quantized weight, or a float initializer), so fused
// and QAT modules share one emitter.
import type { FusedConvBase } from '@qtk/fusion';
import { Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, Linear, type Module } from '@qtk/nn';
import type { Tensor } from '@qtk/tensor';
import { OnnxExportError, type OnnxBuilder, convPads } from '@qtk/onnx';

/** The layer kinds a fake-quantized weight can feed. */
export type WeightedLayer = Conv1d | Conv2d | Conv3d | ConvTranspose1d | ConvTranspose2d | Linear;

export function isWeightedLayer(m: Module): m is WeightedLayer {
  return (
    m instanceof Conv1d ||
    m instanceof Conv2d ||
    m instanceof Conv3d ||
    m instanceof ConvTranspose1d ||
    m instanceof ConvTranspose2d ||
    m instanceof Linear
  );
}

/** Whether a Linear on an input of this rank is written as MatMul with a [in, out] weight (Gemm takes 2-d only). */
export function linearNeedsTransposedWeight(layer: Module, inputRank: number): boolean {
  return layer instanceof Linear && inputRank !== 2;
}

export interface LayerValues {
  /** The input value. */
  x: string;
  /** The weight value: [out, in, ...] (Linear: [in, out] when linearNeedsTransposedWeight). */
  weight: string;
  /** The bias value, or null. */
  bias: string | null;
  /** Rank of the input (Linear: Gemm for 2, MatMul otherwise). */
  inputRank: number;
}

/** One layer as ONNX nodes named `nodeName`; its output is `outName` (made unique). */
export function emitLayer(
  b: OnnxBuilder,
  layer: WeightedLayer,
  v: LayerValues,
  nodeName: string,
  outName: string,
): string {
  const ins = [v.x, v.weight, ...(v.bias ? [v.bias] : [])];
  const out = () => [b.unique(outName)];
  if (layer instanceof Conv1d || layer instanceof Conv2d || layer instanceof Conv3d) {
    return b.node(
      'Conv',
      ins,
      nodeName,
      {
        kernel_shape: layer.kernelSize,
        strides: layer.stride,
        pads: convPads(layer.padding, layer.kernelSize, layer.dilation),
        dilations: layer.dilation,
        group: layer.groups,
      },
      out(),
    )[0]!;
  }
  if (layer instanceof ConvTranspose1d || layer instanceof ConvTranspose2d) {
    return b.node(
      'ConvTranspose',
      ins,
      nodeName,
      {
        kernel_shape: layer.kernelSize,
        strides: layer.stride,
        pads: [...layer.padding, ...layer.padding],
        output_padding: layer.outputPadding,
        dilations: layer.dilation,
        group: layer.groups,
      },
      out(),
    )[0]!;
  }
  if (!linearNeedsTransposedWeight(layer, v.inputRank)) return b.node('Gemm', ins, nodeName, { transB: 1 }, out())[0]!;
  if (!v.bias) return b.node('MatMul', [v.x, v.weight], nodeName, {}, out())[0]!;
  const mm = b.node('MatMul', [v.x, v.weight], `${nodeName}_matmul`)[0]!;
  return b.node('Add', [mm, v.bias], nodeName, {}, out())[0]!;
}

/**
 * A fused module (conv with BN absorbed, then the add, then ReLU / ReLU6) as ONNX nodes: the conv
 * with the given weight and bias, the add of `other` in the order the module adds, the activation.
 * Returns its output `outName` (made unique).
 */
export function emitFused(
  b: OnnxBuilder,
  m: FusedConvBase,
  v: LayerValues,
  other: string | undefined,
  nodeName: string,
  outName: string,
): string {
  const conv = m.conv as Module;
  if (!isWeightedLayer(conv))
    throw new OnnxExportError(`exportOnnx: fused module '${nodeName}' holds a ${conv.constructor.name}, not a conv`);
  const tail = (m.withAdd ? 1 : 0) + (m.activation ? 1 : 0);
  let y = emitLayer(b, conv, v, nodeName, tail ? `${outName}_conv` : outName);
  if (m.withAdd) {
    if (other === undefined)
      throw new OnnxExportError(`exportOnnx: fused module '${nodeName}' adds a second input, but none was given`);
    const last = !m.activation;
    y = b.node('Add', m.convFirst ? [y, other] : [other, y], `${nodeName}_add`, {}, [
      b.unique(last ? outName : `${outName}_add`),
    ])[0]!;
  }
  if (m.activation === 'relu') return b.node('Relu', [y], `${nodeName}_relu`, {}, [b.unique(outName)])[0]!;
  if (m.activation === 'relu6') {
    const lo = b.floatConst([0], `${nodeName}_relu6_min`, []);
    const hi = b.floatConst([6], `${nodeName}_relu6_max`, []);
    return b.node('Clip', [y, lo, hi], `${nodeName}_relu6`, {}, [b.unique(outName)])[0]!;
  }
  return y;
}

/** The rank of a runtime value (0 when it is not a tensor). */
export function rankOf(t: unknown): number {
  return (t as Tensor | undefined)?.shape?.length ?? 0;
}
