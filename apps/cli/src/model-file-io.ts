// The QTK model file (packages/core/src/model-file.ts) — wired here once it lands.
import type { GraphModule } from '@qtk/ir';
import { CliError } from './io.js';

export type ModelKind = 'float' | 'qat' | 'fixed-point';

export interface LoadedModel {
  readonly kind: ModelKind;
  readonly model: GraphModule;
  readonly meta: Record<string, unknown>;
}

export function saveModel(_gm: GraphModule, _path: string, _kind: ModelKind, _meta: Record<string, unknown>): void {
  throw new CliError('saving QTK model files is not available yet (@qtk/core saveModelFile)');
}

export function loadModel(_path: string): LoadedModel {
  throw new CliError('loading QTK model files is not available yet (@qtk/core loadModelFile)');
}
