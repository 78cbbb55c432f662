import type { MarchBackendV1 } from './march-backend.js';
import { marches } from './registries.js';

let current: MarchBackendV1 | null = null;

/**
 * The process-wide default march (what @qtk/core's setMarch selects). It lives here, below fusion
 * and core, so every step that takes a `march` option falls back to the same selection.
 */
export function selectDefaultMarch(march: string | MarchBackendV1 | null): MarchBackendV1 | null {
  current = typeof march === 'string' ? marches.get(march) : march;
  return current;
}

/** The default march, or null when none was selected. */
export function defaultMarch(): MarchBackendV1 | null {
  return current;
}

/** A `march` option resolved: an id through the `marches` registry, a backend as given, else the default (maybe null). */
export function resolveMarchOption(march: string | MarchBackendV1 | undefined): MarchBackendV1 | null {
  if (march === undefined) return current;
  return typeof march === 'string' ? marches.get(march) : march;
}
