import '@qtk/march-bayes';
import '@qtk/march-bernoulli2';
// installs the partition prepareQatFx runs for --hybrid
import '@qtk/hybrid';
import { QtkError } from '@qtk/spec';
import { closeNames, didYouMean } from '@qtk/tensor';
import { type CommandSpec, formatHelp, parseArgs } from './args.js';
import { formatColumns, formatProse } from './help-layout.js';
import { checkSpec, runCheck } from './commands/check.js';
import { compareSpec, runCompare } from './commands/compare.js';
import { evalSpec, runEval } from './commands/eval.js';
import { exportSpec, runExport } from './commands/export.js';
import { inspectSpec, runInspect } from './commands/inspect.js';
import { profileSpec, runProfile } from './commands/profile.js';
import { runRun, runSpec } from './commands/run.js';
import { runSensitivity, sensitivitySpec } from './commands/sensitivity.js';
import { quantizeSpec, runQuantize } from './commands/quantize.js';
import { CliError, usageError, type CliIo } from './io.js';
import { loadPlugin, takePluginArgs } from './plugins.js';

interface Command {
  readonly spec: CommandSpec;
  run(argv: readonly string[], io: CliIo): number | Promise<number>;
}

export const COMMANDS: Readonly<Record<string, Command>> = {
  inspect: { spec: inspectSpec, run: runInspect },
  quantize: { spec: quantizeSpec, run: runQuantize },
  eval: { spec: evalSpec, run: runEval },
  run: { spec: runSpec, run: runRun },
  export: { spec: exportSpec, run: runExport },
  compare: { spec: compareSpec, run: runCompare },
  profile: { spec: profileSpec, run: runProfile },
  check: { spec: checkSpec, run: runCheck },
  sensitivity: { spec: sensitivitySpec, run: runSensitivity },
};

const HELP = [
  'usage: qtk <command> [arguments] [options]',
  '',
  ...formatProse(
    "QTK's command line: quantize an ONNX model for a march, evaluate it, export it to ONNX and check the exported file against QTK, without writing code.",
  ),
  '',
  'commands:',
  ...formatColumns(
    Object.values(COMMANDS).map((c) => [c.spec.name, c.spec.summary] as const),
    Math.max(...Object.keys(COMMANDS).map((n) => n.length)),
  ),
  '',
  'options:',
  ...formatColumns(
    [
      ['--help', "show this help (qtk <command> --help: the command's options)"],
      ['--verbose', 'print stack traces of errors'],
      [
        '--plugin MODULE',
        "before the command runs, load a third-party QTK plugin (observers, marches, ...) by package name or path; repeatable. The module exports 'qtkPlugin' or registers into @qtk/spec's registries when imported, e.g. --plugin qtk-march-acme --march acme",
      ],
    ],
    17,
  ),
  '',
  ...formatProse(
    'exit codes: 0 success, 1 error (missing file, wrong shape, unsupported operator, ...; for qtk compare also: the model and the ONNX file differ), 2 usage error',
  ),
  '',
].join('\n');

/**
 * Runs the qtk command line with `argv` (without the node and script paths) and returns the exit
 * code. Output goes to `io`; errors are printed as one clear message (with the stack trace only
 * under --verbose), never thrown.
 */
export async function main(argv: readonly string[], io: CliIo): Promise<number> {
  const verbose = argv.includes('--verbose');
  try {
    const { plugins, rest: args } = takePluginArgs(argv);
    for (const p of plugins) await loadPlugin(p);
    const [name, ...rest] = args;
    if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
      io.out(HELP);
      return name === undefined ? 2 : 0;
    }
    const command = COMMANDS[name];
    if (!command) {
      if (name.startsWith('-')) throw usageError('', `expected a command before '${name}'`);
      throw usageError(
        '',
        `unknown command '${name}'${didYouMean(closeNames(name, Object.keys(COMMANDS), 2))} (commands: ${Object.keys(COMMANDS).join(', ')})`,
      );
    }
    if (rest.includes('--help') || rest.includes('-h')) {
      io.out(formatHelp(command.spec));
      return 0;
    }
    // usage errors first; then a warning for each deprecated option spelling, before the command's output
    for (const w of parseArgs(command.spec, rest).deprecated) io.err(`qtk: warning: ${w}\n`);
    return await command.run(rest, io);
  } catch (e) {
    return reportError(e, io, verbose);
  }
}

function reportError(e: unknown, io: CliIo, verbose: boolean): number {
  const err = e instanceof Error ? e : new Error(String(e));
  const expected = err instanceof CliError || QtkError.isInstance(err);
  io.err(`qtk: error: ${err.message}\n`);
  if (verbose) io.err(`${err.stack ?? ''}\n`);
  else if (!expected)
    io.err('(an unexpected error: run again with --verbose for the stack trace, and please report it)\n');
  return err instanceof CliError ? err.exitCode : 1;
}
