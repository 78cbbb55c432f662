import { loadModelFileSync, saveModelFileSync, type LoadedModel } from '@qtk/core';
import type { GraphModule } from '@qtk/ir';
import { requireFile } from './model-input.js';

/** Writes a QTK model file (@qtk/core's versioned format); a fixed-point model records its march. */
export function saveModel(
  gm: GraphModule,
  path: string,
  kind: 'float' | 'qat' | 'fixed-point',
  meta: Record<string, unknown>,
  march?: string,
): void {
  saveModelFileSync(gm, path, { kind, meta, ...(march !== undefined ? { march } : {}) });
}

/** Reads a QTK model file written by saveModelFile (float, QAT or fixed-point). */
export function loadModel(path: string): LoadedModel {
  requireFile(path, 'model');
  return loadModelFileSync(path);
}
