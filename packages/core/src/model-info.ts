import { GraphModule } from '@qtk/ir';

export type ModelKind = 'float' | 'qat' | 'fixed-point';
export const MODEL_KINDS = ['float', 'qat', 'fixed-point'] as const;

/** What a model is and which march it was made for, as recorded in its GraphModule's `meta`. */
/** `gm.meta` key: prepared with `hybrid: true` (a heterogeneous model). */
export const HYBRID_MODEL = 'hybrid';

export interface ModelInfo {
  /** null when nothing was recorded (a traced float model, a hand-built graph). */
  readonly kind: ModelKind | null;
  readonly march: string | null;
}

/** Records kind and march in `gm.meta` (prepareQatFx: 'qat', convertFx: 'fixed-point'; loading a model file). */
export function recordModelInfo(gm: GraphModule, info: { kind: ModelKind; march: string | null }): void {
  gm.meta = { ...gm.meta, kind: info.kind, march: info.march };
}

/** The kind and march recorded on a model; nulls for what was not recorded or is not valid. */
export function modelInfoOf(model: unknown): ModelInfo {
  const meta = model instanceof GraphModule ? model.meta : {};
  const kind = (MODEL_KINDS as readonly unknown[]).includes(meta.kind) ? (meta.kind as ModelKind) : null;
  const march = typeof meta.march === 'string' && meta.march !== '' ? meta.march : null;
  return { kind, march };
}
