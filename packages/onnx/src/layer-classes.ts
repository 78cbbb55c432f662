// The @qtk/nn layer classes that one ONNX op stands for, one class per number of spatial dims: the importer
// picks the class for a rank, the exporter recognises any of them as the op.
import { InvalidArgumentError } from '@qtk/tensor';
import {
  BatchNorm1d,
  BatchNorm2d,
  BatchNorm3d,
  Conv1d,
  Conv2d,
  Conv3d,
  ConvTranspose1d,
  ConvTranspose2d,
} from '@qtk/nn';

/** Conv: Conv1d, Conv2d, Conv3d (index = spatial dims - 1). */
export const CONV_CLASSES = [Conv1d, Conv2d, Conv3d] as const;
/** ConvTranspose: ConvTranspose1d, ConvTranspose2d. */
export const CONV_TRANSPOSE_CLASSES = [ConvTranspose1d, ConvTranspose2d] as const;
/** BatchNormalization: BatchNorm1d (no or one spatial dim), BatchNorm2d, BatchNorm3d. */
export const BATCH_NORM_CLASSES = [BatchNorm1d, BatchNorm2d, BatchNorm3d] as const;

/** The class of `classes` for `spatialDims` spatial dims; the caller has checked that one exists. */
export function classForSpatialDims<C>(classes: readonly C[], spatialDims: number): C {
  const cls = classes[Math.max(spatialDims, 1) - 1];
  if (cls === undefined)
    throw new InvalidArgumentError(
      `classForSpatialDims: no layer class for ${spatialDims} spatial dims (${classes.length} at most); check the rank first`,
    );
  return cls;
}

/** Whether `m` is an instance of one of `classes`. */
export function isInstanceOfAny<T extends object>(
  m: unknown,
  classes: readonly (abstract new (...args: never[]) => T)[],
): m is T {
  return classes.some((cls) => m instanceof cls);
}
