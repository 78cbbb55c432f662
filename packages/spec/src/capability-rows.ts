// Builders for the rows of a capability table that every march writes alike; a table stays data.
import type { CapabilityTableInput, Constraint } from './march-backend.js';

/** One row of a capability table as a march writes it (before defaults). */
export type OpCapabilityInput = CapabilityTableInput['ops'][number];

/** Rows for ops a march computes the same way, in the order given: `opsWithImpl('passthrough', 'Reshape', 'Flatten')`. */
export function opsWithImpl(impl: OpCapabilityInput['impl'], ...ops: string[]): OpCapabilityInput[] {
  return ops.map((op) => ({ op, impl }));
}

/** The constraint that a layer's spatial rank (1 for Conv1d, 2 for Conv2d, 3 for Conv3d) is one of `dims`. */
export function spatialDimsIn(...dims: [number, ...number[]]): Constraint {
  return { kind: 'oneOf', attr: 'spatialDims', values: dims };
}
