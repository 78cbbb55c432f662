import { QtkError } from '@qtk/tensor';
import type { DefaultedDim } from './import/input-shapes.js';

/** Any failure reading, importing, running or exporting an ONNX model. */
export class OnnxError extends QtkError {
  static readonly code: string = 'E_ONNX';
  /**
   * Set by importOnnx when the import failed after it set free input dims to 1 (no inputShapes given
   * for them): those dims, the shapes it imported at, and the advice it appended to the message.
   */
  defaultedDims?: {
    readonly dims: readonly DefaultedDim[];
    readonly importShapes: Readonly<Record<string, readonly number[]>>;
    readonly advice: string;
  };
  constructor(message: string, options?: { cause?: unknown }) {
    // each subclass passes its own static code
    super((new.target as unknown as { code: string }).code, message, options);
  }
}

/** The bytes are not an ONNX model (malformed or truncated protobuf, missing graph). */
export class OnnxFormatError extends OnnxError {
  static override readonly code: string = 'E_ONNX_FORMAT';
}

/**
 * Importing the model would allocate more than the import's cap (`maxElements`): a declared input or
 * a computed tensor far larger than the file could justify. Raise the cap if the model is trusted.
 */
export class OnnxLimitError extends OnnxError {
  static override readonly code: string = 'E_ONNX_LIMIT';
}

/** The model keeps tensors in external data files, which QTK does not read. */
export class OnnxExternalDataError extends OnnxError {
  static override readonly code: string = 'E_ONNX_EXTERNAL_DATA';
}

export interface UnsupportedNode {
  name: string;
  opType: string;
  domain: string;
  opset: number;
  reason: string;
}

/** Lists every node of a model the importer cannot express, not only the first. */
export class UnsupportedOnnxOpError extends OnnxError {
  static override readonly code: string = 'E_UNSUPPORTED_ONNX_OP';
  constructor(readonly nodes: readonly UnsupportedNode[]) {
    super(
      `importOnnx: ${nodes.length} node(s) cannot be imported:\n` +
        nodes
          .map((n) => `  - '${n.name}' ${n.domain || 'ai.onnx'}::${n.opType} (opset ${n.opset}): ${n.reason}`)
          .join('\n') +
        '\nRewrite these nodes (e.g. with onnx-simplifier or a different export opset) or extend @qtk/onnx.',
    );
  }
}

/** A tensor given to an imported model does not match the shape its ONNX input declares. */
export class OnnxInputShapeError extends OnnxError {
  static override readonly code: string = 'E_ONNX_INPUT_SHAPE';
}

/** A GraphModule holds something the exporter cannot write as ONNX. */
export class OnnxExportError extends OnnxError {
  static override readonly code: string = 'E_ONNX_EXPORT';
  /** The opset the model needs, when this export failed only because its opset was lower. */
  readonly neededOpset?: number;
  constructor(message: string, options?: { cause?: unknown; neededOpset?: number }) {
    super(message, options);
    if (options?.neededOpset !== undefined) this.neededOpset = options.neededOpset;
  }
}

/** A node attribute holds a value no model can mean (a NaN or infinite float, such as Gemm's alpha = NaN). */
export class OnnxAttributeError extends OnnxError {
  static override readonly code: string = 'E_ONNX_ATTRIBUTE';
  constructor(
    readonly node: string,
    readonly opType: string,
    readonly attribute: string,
    value: string,
  ) {
    super(
      `importOnnx: node '${node}' (${opType}): attribute '${attribute}' is ${value}, which no ${opType} can compute with; ` +
        'fix the exporter or the file (every float attribute must be a finite number)',
    );
  }
}
