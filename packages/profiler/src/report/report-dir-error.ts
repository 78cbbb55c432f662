import { QtkError } from '@qtk/tensor';

/** The report's output directory is a file (or under one), or cannot be created. */
export class ReportDirError extends QtkError {
  static readonly code = 'E_REPORT_DIR';
  readonly path: string;
  constructor(path: string, problem: string, options?: { cause?: unknown }) {
    super(
      'E_REPORT_DIR',
      `cannot write the profiler report to '${path}': ${problem}; pass a directory that exists or can be created (outDir)`,
      options,
    );
    this.path = path;
  }
}
