import type { FakeQuantize } from '@qtk/fake-quant';
import {
  defaultMarch,
  marches,
  QConfigError,
  selectDefaultMarch,
  type MarchBackendV1,
  type QuantDType,
} from '@qtk/spec';

/**
 * Selects the default march by its registered id (a built-in march's or a third party's): what
 * fuseFx, prepareQatFx and convertFx use when they are not given `{ march }`.
 */
export function setMarch(id: string): MarchBackendV1 {
  return selectDefaultMarch(marches.get(id))!; // a miss throws, listing the registered marches
}

/** The selected march, or null before setMarch. */
export function getMarch(): MarchBackendV1 | null {
  return defaultMarch();
}

/** Clears the selection (tests). */
export function resetMarch(): void {
  selectDefaultMarch(null);
}

/**
 * Throws a QConfigError naming the module when the march cannot carry the qconfig's dtypes:
 * activation dtypes from the capability table, weight dtypes likewise, then the march's own hook.
 */
export function checkQconfigForMarch(
  march: MarchBackendV1,
  module: string,
  moduleType: string,
  fakeQuants: { activation: FakeQuantize | null; weight: FakeQuantize | null },
): void {
  const act = fakeQuants.activation?.dtype ?? null;
  const w = fakeQuants.weight?.dtype ?? null;
  if (act !== null && !march.capabilities.activationDtypes.includes(act)) {
    throw new QConfigError(
      `${moduleType} asks for ${act} activations, which march '${march.id}' does not have ` +
        `(it supports ${march.capabilities.activationDtypes.join(', ')}); give this module a qconfig with a supported dtype or choose another march`,
      { module },
    );
  }
  if (w !== null && !march.capabilities.weightDtypes.includes(w)) {
    throw new QConfigError(
      `${moduleType} asks for ${w} weights, which march '${march.id}' does not have (it supports ${march.capabilities.weightDtypes.join(', ')})`,
      { module },
    );
  }
  march.hooks.checkQConfig?.({
    module,
    moduleType,
    activationDtype: act as QuantDType | null,
    weightDtype: w as QuantDType | null,
  });
}
