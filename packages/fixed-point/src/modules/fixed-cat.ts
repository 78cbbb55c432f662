import type { QuantDType } from '@qtk/spec';
import { DTypeError, InvalidArgumentError, normalizeAxis } from '@qtk/tensor';
import { requantizeInto, type RequantizePlan } from '../requantize.js';
import { QTensor } from '../qtensor.js';
import { intStorage, qtensorOf } from './binary-operands.js';
import { PlannedModule } from './planned-module.js';

export interface FixedCatConfig {
  /** One plan per input, from its scale to the output's (a saturating copy where equal). */
  readonly requants: readonly RequantizePlan[];
  readonly outScale: number;
  readonly outDtype: QuantDType;
}

/** cat in fixed point (march-semantics.md §1): every input requantized to the output scale and dtype, then joined. */
export class FixedCat extends PlannedModule<FixedCatConfig> {
  forward(tensors: readonly QTensor[], axis = 0): QTensor {
    const c = this.config;
    if (!Array.isArray(tensors) || tensors.length !== c.requants.length) {
      throw new InvalidArgumentError(
        `cat (fixed point): converted for ${c.requants.length} inputs, got ${Array.isArray(tensors) ? tensors.length : typeof tensors}`,
      );
    }
    tensors.forEach((t, k) => {
      if (!(t instanceof QTensor)) throw new DTypeError(`cat (fixed point): input ${k} is not a quantized tensor`);
    });
    const first = tensors[0]!.shape;
    const a = normalizeAxis(axis, first.length, 'cat');
    let outer = 1;
    let inner = 1;
    for (let d = 0; d < a; d++) outer *= first[d]!;
    for (let d = a + 1; d < first.length; d++) inner *= first[d]!;
    const sizes = tensors.map((t: QTensor, k: number) => {
      if (t.shape.length !== first.length || t.shape.some((d: number, i: number) => i !== a && d !== first[i])) {
        throw new InvalidArgumentError(
          `cat (fixed point): input ${k} has shape [${t.shape}], input 0 [${first}]; they must agree outside axis ${a}`,
        );
      }
      return t.shape[a]!;
    });
    const total = sizes.reduce((p, s) => p + s, 0);
    const out = intStorage(c.outDtype, outer * total * inner);
    let at = 0;
    tensors.forEach((t, k) => {
      const v = t.ints();
      const q = intStorage(c.outDtype, v.length) as Int8Array | Int16Array | Int32Array;
      requantizeInto(v, c.requants[k]!, 1, q);
      const block = sizes[k]! * inner;
      for (let o = 0; o < outer; o++) out.set(q.subarray(o * block, (o + 1) * block), (o * total + at) * inner);
      at += sizes[k]!;
    });
    const shape = [...first];
    shape[a] = total;
    return qtensorOf(out, shape, c.outScale, c.outDtype);
  }

  override extraRepr(): string {
    return `cat of ${this.config.requants.length}, out=${this.config.outDtype}`;
  }
}
