// Export rules of the fused, fake-quant and QAT modules: a fused conv as Conv (+ Add) (+ Relu / Clip),
// a fake-quant as QuantizeLinear → DequantizeLinear, a QAT module as its float module with a
// dequantized int8 / int16 weight and its output fake-quant. Naming: the value a QTK node computes
// keeps the node's name; a QAT module's float result before its output fake-quant is `<node>_float`,
// integers are `<...>_quantized`, a dequantized weight is `<module path>.weight`.
import { QatModule } from '@qtk/core';
import { FakeQuantize } from '@qtk/fake-quant';
import { LayerNormQat, SoftmaxQat } from '@qtk/fixed-point';
import { FusedConvBase } from '@qtk/fusion';
import { type Module, QuantStub } from '@qtk/nn';
import type { Tensor } from '@qtk/tensor';
import {
  OnnxExportError,
  exportModule,
  type ModuleExportStep,
  moduleExportRuleOf,
  registerExportSetup,
  registerModuleExport,
} from '@qtk/onnx';
import { exportLayerNormQat, exportSoftmaxQat } from './composite-rules.js';
import { freezeFakeQuantsForExport } from './freeze-fake-quants.js';
import { dequantizedWeight, floatParameter, isFakeQuantActive, quantizeDequantize } from './qdq-emit.js';
import {
  emitFused,
  emitLayer,
  isWeightedLayer,
  type LayerValues,
  linearNeedsTransposedWeight,
  rankOf,
} from './weighted-layer.js';

/** A standalone fake-quant (after a functional op or an add): QDQ of its input, or nothing while it only observes. */
function exportFakeQuantize(s: ModuleExportStep): string[] {
  const fq = s.module as FakeQuantize;
  if (!isFakeQuantActive(fq)) return [s.inputs[0]!];
  return [quantizeDequantize(s.b, s.inputs[0]!, fq, s.name, s.name, s.path)];
}

/** A fused module of a float (fused, not prepared) model: its conv's own float weight and bias. */
function exportFused(s: ModuleExportStep): string[] {
  const m = s.module as FusedConvBase;
  const conv = m.conv as Module & { weight: Tensor; bias?: Tensor | null };
  if (!isWeightedLayer(conv))
    throw new OnnxExportError(`exportOnnx: fused module '${s.path}' holds a ${conv.constructor.name}, not a conv`);
  const rank = rankOf(s.args[0]);
  const t = linearNeedsTransposedWeight(conv, rank);
  const v: LayerValues = {
    x: s.inputs[0]!,
    weight: floatParameter(s.b, conv.weight, `${s.path}.conv.weight${t ? '_t' : ''}`, t),
    bias: conv.bias ? s.b.tensor(conv.bias, `${s.path}.conv.bias`) : null,
    inputRank: rank,
  };
  return [emitFused(s.b, m, v, s.inputs[1], s.name, s.name)];
}

/** The float module inside a QAT module (no active weight fake-quant): its own rule, else the float exporter. */
function exportInner(s: ModuleExportStep, inner: Module, name: string): string[] {
  if (inner instanceof QuantStub) return [s.inputs[0]!];
  const step = { ...s, module: inner, method: undefined, name, path: `${s.path}.module` };
  const rule = moduleExportRuleOf(inner);
  return rule ? rule(step) : exportModule(inner, step, undefined);
}

/** A conv / linear / fused module with its weight fake-quantized: DequantizeLinear of the weight's integers. */
function exportWithQuantizedWeight(s: ModuleExportStep, m: QatModule, name: string): string[] | null {
  const inner = m.module;
  const fq = m.weightFakeQuant;
  if (!fq || !isFakeQuantActive(fq)) return null;
  const layer = (inner instanceof FusedConvBase ? inner.conv : inner) as Module & { bias?: Tensor | null };
  if (!isWeightedLayer(layer)) return null;
  const rank = rankOf(s.args[0]);
  const t = linearNeedsTransposedWeight(layer, rank);
  const where = `${s.path}.weightFakeQuant`;
  const v: LayerValues = {
    x: s.inputs[0]!,
    weight: dequantizedWeight(s.b, layer.weight, fq, `${s.path}.weight${t ? '_t' : ''}`, where, t),
    bias: layer.bias ? s.b.tensor(layer.bias, `${s.path}.bias`) : null,
    inputRank: rank,
  };
  if (inner instanceof FusedConvBase) return [emitFused(s.b, inner, v, s.inputs[1], s.name, name)];
  return [emitLayer(s.b, layer, v, s.name, name)];
}

/** A QAT module: the float (or fused) module with its fake-quantized weight, then its output fake-quant. */
function exportQatModule(s: ModuleExportStep): string[] {
  const m = s.module as QatModule;
  if (s.method !== undefined)
    throw new OnnxExportError(`exportOnnx: node '${s.name}' calls QatModule.${s.method}, which has no ONNX form`);
  const act = m.activationPostProcess && isFakeQuantActive(m.activationPostProcess) ? m.activationPostProcess : null;
  const floatName = act ? `${s.name}_float` : s.name;
  const y = exportWithQuantizedWeight(s, m, floatName) ?? exportInner(s, m.module, floatName);
  if (!act) return y;
  if (y.length !== 1)
    throw new OnnxExportError(`exportOnnx: QAT module '${s.path}' computes ${y.length} values; one was expected`);
  return [quantizeDequantize(s.b, y[0]!, act, s.name, s.name, `${s.path}.activationPostProcess`)];
}

let registered = false;

/** Registers the QDQ export of fused, fake-quant, QAT and composite QAT modules (runs when @qtk/onnx loads; idempotent). */
export function registerQdqExport(): void {
  if (registered) return;
  registered = true;
  registerModuleExport(FakeQuantize, exportFakeQuantize);
  registerModuleExport(FusedConvBase, exportFused);
  registerModuleExport(QatModule, exportQatModule);
  registerModuleExport(SoftmaxQat, exportSoftmaxQat);
  registerModuleExport(LayerNormQat, exportLayerNormQat);
  registerExportSetup(freezeFakeQuantsForExport);
}
