import type { FakeQuantize } from '@qtk/fake-quant';
import { FusedConvBase, shallowCloneModule } from '@qtk/fusion';
import { registerLeafModule } from '@qtk/ir';
import { Module } from '@qtk/nn';
import { opOfModule, type Tensor } from '@qtk/tensor';

/**
 * The layer holding the weight of a conv-family or fused module (a module whose op in the op
 * catalog is Conv, ConvTranspose or Gemm), and its weight's channel axis (1 for ConvTranspose's
 * [in, out / groups, ...] layout, else 0); null otherwise.
 */
export function weightedLayer(
  module: Module,
): { layer: Module & { weight: Tensor; bias?: Tensor | null }; chAxis: number } | null {
  const layer = module instanceof FusedConvBase ? (module.conv as Module) : module;
  const op = opOfModule(layer)?.op;
  if (op !== 'Conv' && op !== 'ConvTranspose' && op !== 'Gemm') return null;
  return { layer: layer as Module & { weight: Tensor }, chAxis: op === 'ConvTranspose' ? 1 : 0 };
}

/**
 * weightedLayer of a QAT module, made the QAT module's own first: prepareQatFx shares a layer without a BatchNorm
 * to absorb with the float model, so a pass that gives the layer new parameters (bias correction, AdaRound) works
 * on shallow copies of the layer and of the fused module around it, put in their places.
 */
export function ownWeightedLayer(qat: QatModule): ReturnType<typeof weightedLayer> {
  const found = weightedLayer(qat.module);
  if (!found) return null;
  const layer = shallowCloneModule(found.layer);
  if (qat.module instanceof FusedConvBase) {
    const fused = shallowCloneModule(qat.module);
    fused.setChild('conv', layer);
    qat.setChild('module', fused);
  } else {
    qat.setChild('module', layer);
  }
  return { layer, chAxis: found.chAxis };
}

/**
 * The QAT form of a module: the float (or fused) module run with its weight fake-quantized, and
 * its output through an activation fake-quant (none for an "out" qconfig). Parameters are the
 * float module's own, so training the QAT model trains them.
 */
export class QatModule extends Module {
  readonly module: Module;
  readonly weightFakeQuant: FakeQuantize | null;
  readonly activationPostProcess: FakeQuantize | null;

  constructor(module: Module, weightFakeQuant: FakeQuantize | null, activationPostProcess: FakeQuantize | null) {
    super();
    this.module = module;
    this.weightFakeQuant = weightFakeQuant;
    this.activationPostProcess = activationPostProcess;
    this.training = module.training;
  }

  forward(...args: Tensor[]): Tensor {
    let y: Tensor;
    const w = this.weightFakeQuant ? weightedLayer(this.module) : null;
    if (w && this.weightFakeQuant) {
      // run the layer's own forward with `weight` shadowed by its fake-quantized value
      const wq = this.weightFakeQuant.call(w.layer.weight);
      const layer = Object.create(w.layer) as Module;
      Object.defineProperty(layer, 'weight', { value: wq, enumerable: true });
      const runLayer = (x: Tensor) => (w.layer.forward as (x: Tensor) => Tensor).call(layer, x);
      if (this.module instanceof FusedConvBase) {
        // the shadowed layer itself (the fused module may run its conv with the epilogue), its hooks never run
        Object.defineProperty(layer, 'call', { value: runLayer });
        Object.defineProperty(layer, 'isCallPlain', { value: () => true });
        const fused = Object.create(this.module) as FusedConvBase;
        Object.defineProperty(fused, 'conv', { value: layer, enumerable: true });
        y = (this.module.forward as (...a: Tensor[]) => Tensor).apply(fused, args);
      } else {
        y = runLayer(args[0]!);
      }
    } else {
      y = (this.module as unknown as { call(...a: Tensor[]): Tensor }).call(...args);
    }
    return this.activationPostProcess ? this.activationPostProcess.call(y) : y;
  }

  override extraRepr(): string {
    return `${this.module.constructor.name}${this.weightFakeQuant ? ', weight fake-quant' : ''}${this.activationPostProcess ? '' : ', no activation fake-quant'}`;
  }
}

registerLeafModule(QatModule);
