import { ROUNDING_MODES, type Tensor } from '@qtk/tensor';
import { z } from 'zod';
import type { ObserverV1, QParams } from './observer.js';
import type { FactoryV1 } from './options.js';

/**
 * horizon_plugin_pytorch's fake-quant states:
 * - CALIBRATION: the observer runs, the output is the float input unchanged;
 * - QAT: the observer runs (unless frozen) and the output is fake-quantized with a straight-through gradient;
 * - VALIDATION: the observer is frozen and the output is fake-quantized.
 */
export const FAKE_QUANT_STATES = ['QAT', 'CALIBRATION', 'VALIDATION'] as const;
export type FakeQuantState = (typeof FAKE_QUANT_STATES)[number];

/** Schema of a `RoundingMode` (@qtk/tensor): 'half_up' or 'half_even'. */
export const roundingModeSchema = z.enum(ROUNDING_MODES);

/** Contract of a fake-quant instance (an nn Module in practice; `forward` is its call). */
export interface FakeQuantV1 {
  readonly apiVersion: 1;
  /** Registry name of its kind ('fake_quantize', 'lsq', ...). */
  readonly kind: string;
  readonly fakeQuantState: FakeQuantState;
  setFakeQuantState(state: FakeQuantState): void;
  /** The observer feeding the scale (null for a purely learned or fixed scale). */
  readonly observer: ObserverV1 | null;
  forward(x: Tensor): Tensor;
  /** Current quantization parameters (observed, learned or fixed). */
  calculateQparams(): QParams;
}

/** What the fake-quant registry holds. */
export type FakeQuantFactoryV1<O = unknown> = FactoryV1<FakeQuantV1, O>;
