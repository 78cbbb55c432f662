import { InvalidArgumentError, ROUNDING_MODES, type RoundingMode } from '@qtk/tensor';

let defaultRounding: RoundingMode = 'half_up';

/** The rounding fake-quant modules use when their own `rounding` option is null (march-semantics §0). */
export function getDefaultRounding(): RoundingMode {
  return defaultRounding;
}

/** Switches the global rounding of fake quantization (half_up by default, as the marches do). */
export function setDefaultRounding(mode: RoundingMode): void {
  if (!ROUNDING_MODES.includes(mode)) {
    throw new InvalidArgumentError(
      `setDefaultRounding: '${String(mode)}' is not a rounding mode; use 'half_up' or 'half_even'`,
    );
  }
  defaultRounding = mode;
}
