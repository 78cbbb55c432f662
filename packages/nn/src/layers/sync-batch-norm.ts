import type { BatchNormLayerOptions } from './normalization.js';
import { BatchNormNd } from './normalization.js';

/**
 * PyTorch's SyncBatchNorm on one worker: batch normalisation over channel axis 1 of any input
 * from [N, C] to [N, C, D, H, W]. QTK trains on one process, so there are no statistics to
 * synchronise and it behaves exactly like BatchNorm1d/2d/3d; it exists so models written with it
 * trace, fuse and load state dicts under the same names.
 */
export class SyncBatchNorm extends BatchNormNd {
  constructor(numFeatures: number, options: BatchNormLayerOptions = {}) {
    super('SyncBatchNorm', [2, 3, 4, 5], numFeatures, options);
  }
}
