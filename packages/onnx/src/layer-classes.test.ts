import * as nn from '@qtk/nn';
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
  it('classForSpatialDims picks the class for a number of spatial dims (nn.BatchNorm1d also for none)', () => {
    expect([1, 2, 3].map((r) => classForSpatialDims(CONV_CLASSES, r))).toEqual([nn.Conv1d, nn.Conv2d, nn.Conv3d]);
    expect([1, 2].map((r) => classForSpatialDims(CONV_TRANSPOSE_CLASSES, r))).toEqual([
      nn.ConvTranspose1d,
      nn.ConvTranspose2d,
    ]);
    expect([0, 1, 2, 3].map((r) => classForSpatialDims(BATCH_NORM_CLASSES, r))).toEqual([
      nn.BatchNorm1d,
      nn.BatchNorm1d,
      nn.BatchNorm2d,
      nn.BatchNorm3d,
    ]);
  });

  it('classForSpatialDims refuses a rank with no class, with a typed error', () => {
    expect(() => classForSpatialDims(CONV_TRANSPOSE_CLASSES, 3)).toThrow(InvalidArgumentError);
    expect(() => classForSpatialDims(CONV_TRANSPOSE_CLASSES, 3)).toThrow(/3 spatial dims \(2 at most\)/);
  });

  it('isInstanceOfAny recognises every class of the op and nothing else', () => {
    expect(isInstanceOfAny(new nn.Conv1d(1, 1, 1), CONV_CLASSES)).toBe(true);
    expect(isInstanceOfAny(new nn.Conv3d(1, 1, 1), CONV_CLASSES)).toBe(true);
    expect(isInstanceOfAny(new nn.ConvTranspose2d(1, 1, 1), CONV_CLASSES)).toBe(false);
    expect(isInstanceOfAny(new nn.BatchNorm3d(2), BATCH_NORM_CLASSES)).toBe(true);
    expect(isInstanceOfAny(new nn.Linear(1, 1), BATCH_NORM_CLASSES)).toBe(false);
  });
});
