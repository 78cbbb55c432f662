import { DTypeError, Tensor } from '@qtk/tensor';

/**
 * A trainable tensor owned by a module: a leaf with `requiresGrad` set. Modules find their
 * parameters by looking for `Parameter`-valued fields, so assigning one registers it.
 * The storage of `data` is shared when it is already contiguous.
 */
export class Parameter extends Tensor {
  constructor(data: Tensor, requiresGrad = true) {
    if (requiresGrad && data.dtype !== 'float32') {
      throw new DTypeError(
        `Parameter: only float32 tensors can require gradients, got ${data.dtype}; pass requiresGrad=false or convert with .toType('float32')`,
      );
    }
    super({ data: data.values(), shape: data.shape, dtype: data.dtype, requiresGrad });
  }
}
