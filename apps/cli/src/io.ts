/** Where a command writes; tests pass buffers, the bin passes process.stdout / process.stderr. */
export interface CliIo {
  out(text: string): void;
  err(text: string): void;
  /** Whether `err` writes to a terminal, where progress redraws one line; elsewhere each step gets its own line. */
  readonly errIsTerminal?: boolean;
}

/** The process's streams. */
export const processIo: CliIo = {
  out: (t) => void process.stdout.write(t),
  err: (t) => void process.stderr.write(t),
  get errIsTerminal() {
    return process.stderr.isTTY === true;
  },
};

/** An io that records everything (for tests and embedding); `errIsTerminal` pretends stderr is a terminal. */
export function bufferIo(options: { errIsTerminal?: boolean } = {}): CliIo & { stdout: string; stderr: string } {
  const io = {
    stdout: '',
    stderr: '',
    errIsTerminal: options.errIsTerminal === true,
    out(t: string) {
      io.stdout += t;
    },
    err(t: string) {
      io.stderr += t;
    },
  };
  return io;
}

/**
 * An error the user can fix (bad arguments, a missing file, wrong shapes): printed without a stack
 * trace. `exitCode` 2 is a usage error (the command line itself), 1 anything else.
 */
export class CliError extends Error {
  readonly exitCode: number;
  constructor(message: string, options: { exitCode?: number; cause?: unknown } = {}) {
    super(message, options.cause !== undefined ? { cause: options.cause } : undefined);
    this.name = 'CliError';
    this.exitCode = options.exitCode ?? 1;
  }
}

/** A usage error (exit code 2): the message, then a pointer to the command's help. */
export function usageError(command: string, message: string): CliError {
  const help = command ? `qtk ${command} --help` : 'qtk --help';
  return new CliError(`${message}\nrun '${help}' for the options`, { exitCode: 2 });
}
