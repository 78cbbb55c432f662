import { describe, expect, it } from 'vitest';
import { tensor } from '../index.js';
import { expectAllNear, expectTensorNear } from './expect-near.js';

describe('expectAllNear / expectTensorNear', () => {
  it('pass within the tolerance and fail outside it, on length and shape too', () => {
    expectAllNear([1, 2], [1.00005, 1.99995], 1e-4);
    expect(() => expectAllNear([1, 2], [1, 2.001], 1e-4)).toThrow();
    expect(() => expectAllNear([1, 2], [1], 1)).toThrow();
    expectTensorNear(tensor([[1, 2]]), { data: [1, 2.00005], shape: [1, 2] }, 1e-4);
    expect(() => expectTensorNear(tensor([[1, 2]]), { data: [1, 2.001], shape: [1, 2] }, 1e-4)).toThrow();
    expect(() => expectTensorNear(tensor([1, 2]), { data: [1, 2], shape: [1, 2] }, 1e-4)).toThrow();
  });
});
