import { Module } from '@qtk/nn';

/**
 * A fixed-point module whose integers are all in its config (the plans conversion derived, which its
 * codec stores as they are): `new FixedMul(config).config === config`.
 */
export abstract class PlannedModule<C> extends Module {
  static override readonly takesQuantizedValues = true;

  readonly config: C;

  constructor(config: C) {
    super();
    this.config = config;
  }
}
