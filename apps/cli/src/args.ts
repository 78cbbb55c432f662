import { closeNames, didYouMean } from '@qtk/tensor';
import { formatColumns, formatProse } from './help-layout.js';
import { usageError } from './io.js';

/** One option of a command: `--name value` (string / number) or a `--name` flag (boolean). */
export interface OptionSpec {
  readonly type: 'string' | 'number' | 'boolean';
  /** Shown by --help after the option name (e.g. 'DIR'). */
  readonly value?: string;
  readonly description: string;
  readonly default?: string | number | boolean;
  /** A number option: only whole numbers. */
  readonly integer?: boolean;
  /** A number option: the smallest accepted value. */
  readonly min?: number;
  /** A number option: the largest accepted value. */
  readonly max?: number;
  /** A string option: the only values it accepts (a usage error names them otherwise). */
  readonly choices?: readonly string[];
  /**
   * The option must be given; this says what it is, for the usage error when it is not:
   * `required: 'the dataset'` gives "missing --data DIR (the dataset)". Not checked with --help.
   */
  readonly required?: string;
  /** A deprecated spelling: its value goes to this option, with a warning (see deprecationWarnings). */
  readonly replacedBy?: string;
}

export interface CommandSpec {
  readonly name: string;
  /** Positional arguments, in order (all required). */
  readonly positionals: readonly { readonly name: string; readonly description: string }[];
  readonly options: Readonly<Record<string, OptionSpec>>;
  readonly summary: string;
  /** Extra paragraphs of --help. */
  readonly details?: string;
}

export interface ParsedArgs {
  readonly positionals: string[];
  readonly options: Record<string, string | number | boolean | undefined>;
  readonly help: boolean;
  readonly verbose: boolean;
  /** A warning for each deprecated option spelling used, naming the option to use instead. */
  readonly deprecated: string[];
}

/** Options every command accepts. */
export const COMMON_OPTIONS: Readonly<Record<string, OptionSpec>> = {
  help: { type: 'boolean', description: 'show this help' },
  verbose: { type: 'boolean', description: 'print stack traces of errors' },
  // Taken out of the command line by main() before the command parses it (see plugins.ts); listed for --help.
  plugin: {
    type: 'string',
    value: 'MODULE',
    description: 'load a third-party QTK plugin (observers, marches) by package name or path first; repeatable',
  },
};

/** Parses a number, also a fraction ('1/128'). */
export function parseNumber(text: string): number {
  const m = /^\s*([-+]?[0-9.eE+-]+)\s*\/\s*([-+]?[0-9.eE+-]+)\s*$/.exec(text);
  const v = m ? Number(m[1]) / Number(m[2]) : text.trim() === '' ? NaN : Number(text);
  return v;
}

/**
 * Parses `argv` against a command's spec: `--name value`, `--name=value`, flags, positionals.
 * Unknown options, missing values, non-numbers and a wrong positional count are usage errors
 * naming the argument.
 */
export function parseArgs(spec: CommandSpec, argv: readonly string[]): ParsedArgs {
  const all = { ...spec.options, ...COMMON_OPTIONS };
  const positionals: string[] = [];
  const options: Record<string, string | number | boolean | undefined> = {};
  for (const [k, o] of Object.entries(spec.options)) if (o.default !== undefined) options[k] = o.default;
  let help = false;
  let verbose = false;
  const deprecated: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--') {
      positionals.push(...argv.slice(i + 1));
      break;
    }
    if (!a.startsWith('--') || a === '-') {
      if (a === '-h') {
        help = true;
        continue;
      }
      if (a.startsWith('-') && a.length > 1 && Number.isNaN(Number(a)))
        throw usageError(spec.name, `unknown option '${a}' (options are written --name)`);
      positionals.push(a);
      continue;
    }
    const eq = a.indexOf('=');
    const name = a.slice(2, eq < 0 ? undefined : eq);
    const o = all[name];
    if (!o) {
      const known = Object.keys(all)
        .map((k) => `--${k}`)
        .join(', ');
      const close = closeNames(name, Object.keys(all), 2).map((k) => `--${k}`);
      throw usageError(
        spec.name,
        `unknown option '--${name}' for 'qtk ${spec.name}'${didYouMean(close)} (known: ${known})`,
      );
    }
    if (o.replacedBy !== undefined) {
      const text = `--${name} is deprecated for 'qtk ${spec.name}': use --${o.replacedBy}${o.value ? ` ${o.value}` : ''} (${spec.options[o.replacedBy]?.description ?? ''})`;
      if (!deprecated.includes(text)) deprecated.push(text);
    }
    if (o.type === 'boolean') {
      if (eq >= 0) throw usageError(spec.name, `option '--${name}' is a flag and takes no value`);
      if (name === 'help') help = true;
      else if (name === 'verbose') verbose = true;
      else options[name] = true;
      continue;
    }
    let value: string | undefined;
    if (eq >= 0) value = a.slice(eq + 1);
    else {
      value = argv[i + 1];
      if (value === undefined || (value.startsWith('--') && value.length > 2))
        throw usageError(spec.name, `option '--${name}' needs a value${o.value ? ` (${o.value})` : ''}`);
      i++;
    }
    if (o.type === 'number') {
      const v = parseNumber(value);
      if (!Number.isFinite(v)) throw usageError(spec.name, `option '--${name}' must be a number, got '${value}'`);
      checkRange(spec.name, name, o, v, value);
      options[o.replacedBy ?? name] = v;
    } else {
      checkChoice(spec.name, name, o, value);
      options[o.replacedBy ?? name] = value;
    }
  }
  if (!help) {
    if (positionals.length < spec.positionals.length) {
      const missing = spec.positionals.slice(positionals.length).map((p) => p.name);
      throw usageError(spec.name, `missing argument${missing.length > 1 ? 's' : ''} ${missing.join(', ')}`);
    }
    if (positionals.length > spec.positionals.length) {
      throw usageError(
        spec.name,
        `unexpected argument '${positionals[spec.positionals.length]}' (takes ${spec.positionals.map((p) => p.name).join(' ') || 'no positional arguments'})`,
      );
    }
    for (const [k, o] of Object.entries(spec.options))
      if (o.required !== undefined && options[k] === undefined)
        throw usageError(spec.name, `missing --${k}${o.value ? ` ${o.value}` : ''} (${o.required})`);
  }
  return { positionals, options, help, verbose, deprecated };
}

/** The accepted values of a number option, in words ('an integer >= 1'), or '' when any number goes. */
export function rangeText(o: OptionSpec): string {
  const what = o.integer ? 'an integer' : 'a number';
  if (o.min !== undefined && o.max !== undefined) return `${what} from ${o.min} to ${o.max}`;
  if (o.min !== undefined) return `${what} >= ${o.min}`;
  if (o.max !== undefined) return `${what} <= ${o.max}`;
  return o.integer ? what : '';
}

function checkRange(command: string, name: string, o: OptionSpec, v: number, text: string): void {
  const bad =
    (o.integer && !Number.isInteger(v)) || (o.min !== undefined && v < o.min) || (o.max !== undefined && v > o.max);
  if (bad) throw usageError(command, `option '--${name}' must be ${rangeText(o)}, got '${text}'`);
}

/** The accepted values of a string option with choices, in words: 'ort or qtk', 'one of a, b, c'. */
export function choicesText(choices: readonly string[]): string {
  return choices.length === 2 ? `${choices[0]} or ${choices[1]}` : `one of ${choices.join(', ')}`;
}

function checkChoice(command: string, name: string, o: OptionSpec, value: string): void {
  if (o.choices !== undefined && !o.choices.includes(value))
    throw usageError(command, `--${name} must be ${choicesText(o.choices)}, got '${value}'`);
}

/** The option column's width in --help: longer options get their description on the next line. */
const OPTION_COLUMN = 24;

/** The --help text of a command. */
export function formatHelp(spec: CommandSpec): string {
  const usage = `usage: qtk ${spec.name} ${spec.positionals.map((p) => p.name).join(' ')} [options]`.replace(
    /\s+\[/,
    ' [',
  );
  const lines = [usage, '', ...formatProse(spec.summary), ''];
  if (spec.positionals.length) {
    lines.push('arguments:');
    lines.push(
      ...formatColumns(
        spec.positionals.map((p) => [p.name, p.description] as const),
        OPTION_COLUMN,
      ),
    );
    lines.push('');
  }
  lines.push('options:');
  const rows = Object.entries({ ...spec.options, ...COMMON_OPTIONS }).map(([k, o]) => {
    const left = `--${k}${o.value ? ` ${o.value}` : ''}`;
    const def = o.default !== undefined && o.type !== 'boolean' ? ` (default: ${o.default})` : '';
    const accepted = o.type === 'number' && rangeText(o) ? ` (${rangeText(o)})` : '';
    return [left, `${o.description}${accepted}${def}`] as const;
  });
  lines.push(...formatColumns(rows, OPTION_COLUMN));
  if (spec.details) lines.push('', ...formatProse(spec.details));
  return `${lines.join('\n')}\n`;
}
