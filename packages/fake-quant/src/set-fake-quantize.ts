import type { Module } from '@qtk/nn';
import { FAKE_QUANT_STATES, type FakeQuantState, type FakeQuantV1 } from '@qtk/spec';
import { InvalidArgumentError } from '@qtk/tensor';

function isFakeQuant(m: unknown): m is FakeQuantV1 {
  return typeof (m as FakeQuantV1 | null)?.setFakeQuantState === 'function' && (m as FakeQuantV1).apiVersion === 1;
}

/**
 * Sets every fake-quant module under `model` to `state` (horizon_plugin_pytorch's set_fake_quantize). VALIDATION
 * also puts the model in eval mode, QAT and CALIBRATION leave train/eval alone. Returns the count.
 */
export function setFakeQuantize(model: Module, state: FakeQuantState): number {
  if (!FAKE_QUANT_STATES.includes(state)) {
    throw new InvalidArgumentError(
      `setFakeQuantize: unknown state '${String(state)}'; use one of ${FAKE_QUANT_STATES.join(', ')}`,
    );
  }
  let n = 0;
  for (const m of model.modules()) {
    if (isFakeQuant(m)) {
      m.setFakeQuantState(state);
      n++;
    }
  }
  return n;
}

/** Every fake-quant module with its qualified name. */
export function namedFakeQuants(model: Module): [string, FakeQuantV1][] {
  return model.namedModules().filter((e): e is [string, Module & FakeQuantV1] => isFakeQuant(e[1]));
}
