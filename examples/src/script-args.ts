// The command line of the example scripts: each script's own flags, plus the `--data` and `-h / --help` they all take.
import { type ParseArgsConfig, parseArgs } from 'node:util';

type ScriptOptions = NonNullable<ParseArgsConfig['options']>;
const COMMON = { data: { type: 'string' }, help: { type: 'boolean', short: 'h' } } as const;
type ScriptValues<O extends ScriptOptions> = ReturnType<typeof parseArgs<{ options: O & typeof COMMON }>>['values'];

/** The flags of one script, with `--data` (see dataDirOf) and `-h / --help` added; `--help` prints `help` and exits 0. */
export function scriptArgs<const O extends ScriptOptions>(
  help: string,
  options: O,
  args = process.argv.slice(2),
): ScriptValues<O> {
  const values = parseArgs({ args, options: { ...options, ...COMMON } }).values as ScriptValues<O> & { help?: boolean };
  if (values.help) {
    process.stdout.write(help);
    process.exit(0);
  }
  return values;
}
