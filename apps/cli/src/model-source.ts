import { extname } from 'node:path';
import { modelInfoOf } from '@qtk/core';
import type { GraphModule } from '@qtk/ir';
import type { InputShapeOption } from './input-shape-option.js';
import { loadModel } from './model-file-io.js';
import { loadOnnx, requireFile } from './model-input.js';

/** A model given on the command line: an imported float ONNX file or a QTK model file. */
export interface ModelSource {
  readonly model: GraphModule;
  /** 'float', 'qat' or 'fixed-point'. */
  readonly kind: string;
  /** For reports: the kind and march ('fixed-point, march bayes') or 'float, ONNX'. */
  readonly label: string;
  /** The model file's meta (input shape, preprocessing, ...); {} for ONNX. */
  readonly meta: Record<string, unknown>;
}

/** Whether `path` names an ONNX file (by its extension); anything else is read as a QTK model file. */
export function isOnnxPath(path: string): boolean {
  return extname(path).toLowerCase() === '.onnx';
}

/** Loads an .onnx file (importOnnx: a float model) or a QTK model file (float, QAT or fixed-point). */
export function loadModelSource(
  path: string,
  maxElements?: unknown,
  inputShape?: InputShapeOption | undefined,
): ModelSource {
  requireFile(path, 'model');
  if (isOnnxPath(path))
    return { model: loadOnnx(path, { maxElements, inputShape }), kind: 'float', label: 'float, ONNX', meta: {} };
  const m = loadModel(path);
  const { kind, march } = modelInfoOf(m.model);
  const k = kind ?? m.kind;
  return { model: m.model, kind: k, label: march ? `${k}, march ${march}` : k, meta: m.meta };
}

/** The input shape a model file's meta records (qtk quantize writes [null, C, H, W]; free dims become 1). */
export function savedShape(meta: Record<string, unknown>): number[] | undefined {
  const s = meta.inputShape;
  if (!Array.isArray(s)) return undefined;
  return s.map((d) => (typeof d === 'number' ? d : 1));
}
