import type { CliIo } from './io.js';

/** The steps of a long task on stderr. */
export interface StepProgress {
  step(index: number, total: number, text: string): void;
  /** Ends the progress display (a terminal's redrawn line gets its newline). */
  end(): void;
}

/**
 * Steps redrawn in place (carriage return) when stderr is a terminal, one line per step otherwise,
 * so output piped to a file or a CI log reads one step a line instead of a run of '\r'-joined steps.
 */
export function stepProgress(io: CliIo): StepProgress {
  const terminal = io.errIsTerminal === true;
  let drawn = false;
  return {
    step(index, total, text) {
      const line = `[${index + 1}/${total}] ${text}`;
      if (terminal) {
        io.err(`\r${line.padEnd(32)}`);
        drawn = true;
      } else io.err(`${line}\n`);
    },
    end() {
      if (drawn) io.err('\n');
      drawn = false;
    },
  };
}
