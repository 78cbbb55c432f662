import type { FakeQuantize } from '@qtk/fake-quant';
import type { Node } from '@qtk/ir';
import type { Module } from '@qtk/nn';
import type { ConvertNodeContext, NodeTableOptions, QParams } from '@qtk/spec';
import type { OpMatch, RoundingMode } from '@qtk/tensor';
import { type QatModule, weightedLayer } from './qat-module.js';
import { CALIBRATED_INPUT_SHAPE } from './calibration.js';

/** What convert knows about one node when it asks the march to convert it. */
export interface NodeContextParts {
  readonly march: string;
  readonly node: Node;
  /** The float (or fused) module with its QAT wrapper removed; null for functions and methods. */
  readonly inner: Module | null;
  /** The QAT wrapper of the node's module, if any (its weight and output fake-quants). */
  readonly qat: QatModule | null;
  /** The activation fake-quant after the node when the QAT wrapper has none. */
  readonly outputFakeQuant: FakeQuantize | null;
  readonly catalogOp: OpMatch | null;
  qparamsOf(arg: Node): QParams | null;
  readonly rounding: RoundingMode;
  warn(message: string): void;
  readonly tableOptions?: NodeTableOptions | null;
}

/** The ConvertNodeContext a march's convertNode hook receives (convertFx and late-converted wrapped modules alike). */
export function convertNodeContext(p: NodeContextParts): ConvertNodeContext {
  const { qat } = p;
  const w = qat?.weightFakeQuant ? weightedLayer(qat.module) : null;
  const fq = qat?.activationPostProcess ?? p.outputFakeQuant;
  return {
    march: p.march,
    node: p.node,
    module: p.inner,
    op: p.catalogOp?.op ?? null,
    attrs: p.catalogOp?.attrs ?? {},
    fused: p.catalogOp?.fused ?? null,
    weight:
      w && qat?.weightFakeQuant
        ? { value: w.layer.weight, qparams: qat.weightFakeQuant.calculateQparams(), bias: w.layer.bias ?? null }
        : null,
    qparamsOf: p.qparamsOf,
    outputQparams: fq ? fq.calculateQparams() : null,
    rounding: p.rounding,
    warn: p.warn,
    ...(p.tableOptions !== undefined ? { tableOptions: p.tableOptions } : {}),
    ...(Array.isArray(p.node.meta[CALIBRATED_INPUT_SHAPE])
      ? { inputShape: p.node.meta[CALIBRATED_INPUT_SHAPE] as number[] }
      : {}),
  };
}
