import {
  BatchNorm1d,
  BatchNorm2d,
  BatchNorm3d,
  Conv1d,
  Conv2d,
  Conv3d,
  ConvTranspose1d,
  ConvTranspose2d,
  Linear,
} from '@qtk/nn';
import { InvalidArgumentError } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import {
  BATCH_NORM_CLASSES,
  CONV_CLASSES,
  CONV_TRANSPOSE_CLASSES,
  classForSpatialDims,
  isInstanceOfAny,
} from './layer-classes.js';

describe('the layer classes of one ONNX op', () => {
  it('classForSpatialDims picks the class for a number of spatial dims (BatchNorm1d also for none)', () => {
    expect([1, 2, 3].map((r) => classForSpatialDims(CONV_CLASSES, r))).toEqual([Conv1d, Conv2d, Conv3d]);
    expect([1, 2].map((r) => classForSpatialDims(CONV_TRANSPOSE_CLASSES, r))).toEqual([
      ConvTranspose1d,
      ConvTranspose2d,
    ]);
    expect([0, 1, 2, 3].map((r) => classForSpatialDims(BATCH_NORM_CLASSES, r))).toEqual([
      BatchNorm1d,
      BatchNorm1d,
      BatchNorm2d,
      BatchNorm3d,
    ]);
  });

  it('classForSpatialDims refuses a rank with no class, with a typed error', () => {
    expect(() => classForSpatialDims(CONV_TRANSPOSE_CLASSES, 3)).toThrow(InvalidArgumentError);
    expect(() => classForSpatialDims(CONV_TRANSPOSE_CLASSES, 3)).toThrow(/3 spatial dims \(2 at most\)/);
  });

  it('isInstanceOfAny recognises every class of the op and nothing else', () => {
    expect(isInstanceOfAny(new Conv1d(1, 1, 1), CONV_CLASSES)).toBe(true);
    expect(isInstanceOfAny(new Conv3d(1, 1, 1), CONV_CLASSES)).toBe(true);
    expect(isInstanceOfAny(new ConvTranspose2d(1, 1, 1), CONV_CLASSES)).toBe(false);
    expect(isInstanceOfAny(new BatchNorm3d(2), BATCH_NORM_CLASSES)).toBe(true);
    expect(isInstanceOfAny(new Linear(1, 1), BATCH_NORM_CLASSES)).toBe(false);
  });
});
