import type { LoadedModel } from '@qtk/core';
import { loadModelFileSync, saveModelFileSync } from '@qtk/core/node';
import type { GraphModule } from '@qtk/ir';
import { requireFile } from './model-input.js';

/** Writes a QTK model file (@qtk/core's versioned format) with the kind and march the model records (convertFx's). */
export function saveModel(gm: GraphModule, path: string, meta: Record<string, unknown>): void {
  saveModelFileSync(gm, path, { meta });
}

/** Reads a QTK model file written by saveModelFile (float, QAT or fixed-point). */
export function loadModel(path: string): LoadedModel {
  requireFile(path, 'model');
  return loadModelFileSync(path);
}
