import { QtkError } from '@qtk/tensor';

export interface ShapeMismatch {
  key: string;
  expected: readonly number[];
  got: readonly number[];
}

/** A state dict that does not fit the module it is loaded into (lists every problem at once). */
export class StateDictError extends QtkError {
  static readonly code = 'E_STATE_DICT';
  readonly missingKeys: string[];
  readonly unexpectedKeys: string[];
  readonly shapeMismatches: ShapeMismatch[];

  constructor(
    problems: { missingKeys?: string[]; unexpectedKeys?: string[]; shapeMismatches?: ShapeMismatch[]; detail?: string },
    options?: { cause?: unknown },
  ) {
    const missingKeys = problems.missingKeys ?? [];
    const unexpectedKeys = problems.unexpectedKeys ?? [];
    const shapeMismatches = problems.shapeMismatches ?? [];
    const parts: string[] = [];
    if (problems.detail) parts.push(problems.detail);
    if (missingKeys.length) parts.push(`missing keys: ${missingKeys.join(', ')}`);
    if (unexpectedKeys.length) parts.push(`unexpected keys: ${unexpectedKeys.join(', ')}`);
    if (shapeMismatches.length) {
      parts.push(
        'shape mismatches: ' +
          shapeMismatches
            .map((m) => `${m.key} (module [${m.expected.join(', ')}], state dict [${m.got.join(', ')}])`)
            .join(', '),
      );
    }
    const hint =
      missingKeys.length || unexpectedKeys.length
        ? '; check that the state dict comes from the same architecture, or pass { strict: false } to load the matching keys only'
        : '';
    super('E_STATE_DICT', `loadStateDict: ${parts.join('; ')}${hint}`, options);
    this.missingKeys = missingKeys;
    this.unexpectedKeys = unexpectedKeys;
    this.shapeMismatches = shapeMismatches;
  }
}

/** A data file (IDX, NPY, saved state dict) whose bytes do not follow its format. */
export class DataFormatError extends QtkError {
  static readonly code: string = 'E_DATA_FORMAT';
  readonly path?: string;
  constructor(message: string, path?: string, options?: { cause?: unknown }) {
    // a subclass passes its own static code
    super((new.target as unknown as { code: string }).code, path ? `${path}: ${message}` : message, options);
    this.path = path;
  }
}

/**
 * Compressed bytes given to a parser that reads plain ones (parseIdx on a .gz file): inflate them first,
 * with readIdx / inflateIdx from @qtk/nn/node, or DecompressionStream('gzip') in a browser.
 */
export class CompressedDataError extends DataFormatError {
  static override readonly code: string = 'E_COMPRESSED_DATA';
  readonly compression: 'gzip';
  constructor(what: string, path?: string) {
    super(
      `${what} are gzip-compressed; inflate them first (readIdx or inflateIdx from @qtk/nn/node, DecompressionStream('gzip') in a browser)`,
      path,
    );
    this.compression = 'gzip';
  }
}

/** A data set whose files are not where they were looked for. */
export class DatasetNotFoundError extends QtkError {
  static readonly code = 'E_DATASET_NOT_FOUND';
  readonly path: string;
  constructor(message: string, path: string, options?: { cause?: unknown }) {
    super('E_DATASET_NOT_FOUND', message, options);
    this.path = path;
  }
}

/**
 * A save whose target is not a regular file or a new path (a directory, FIFO, socket, device, or a
 * symbolic link to one or to nothing): QTK refuses rather than replace it with a regular file.
 */
export class WriteTargetError extends QtkError {
  static readonly code = 'E_WRITE_TARGET';
  readonly path: string;
  readonly kind: string;
  constructor(path: string, kind: string, options?: { cause?: unknown }) {
    super(
      'E_WRITE_TARGET',
      `cannot save to '${path}': it is ${kind}; QTK writes only to a regular file or a new path, so choose a file name`,
      options,
    );
    this.path = path;
    this.kind = kind;
  }
}
