import { isAbsolute, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { fakeQuants, fusionPatterns, marches, observers, registerPluginModule } from '@qtk/spec';
import { CliError, usageError } from './io.js';
import { resolveFromDir } from './resolve-from-dir.js';

/**
 * Splits every `--plugin MODULE` / `--plugin=MODULE` out of `argv` (anywhere on the line, repeatable,
 * each module once), so the commands never see them. A `--plugin` without a module name is a usage error.
 */
export function takePluginArgs(argv: readonly string[]): { plugins: string[]; rest: string[] } {
  const plugins: string[] = [];
  const rest: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--') {
      rest.push(...argv.slice(i));
      break;
    }
    let name: string | undefined;
    if (a.startsWith('--plugin=')) name = a.slice('--plugin='.length);
    else if (a === '--plugin') {
      name = argv[i + 1];
      if (name?.startsWith('-')) name = undefined;
      else i++;
    } else {
      rest.push(a);
      continue;
    }
    if (!name) throw usageError('', "option '--plugin' needs a value (MODULE: a package name or a path to a module)");
    if (!plugins.includes(name)) plugins.push(name);
  }
  return { plugins, rest };
}

const REGISTRIES = [observers, fakeQuants, fusionPatterns, marches] as const;

function registeredCount(): number {
  return REGISTRIES.reduce((n, r) => n + r.names().length, 0);
}

/**
 * Imports `specifier` the way Node would from the current directory (so a plugin installed in the
 * user's project is found even when qtk is installed elsewhere), falling back to qtk's own location.
 * Paths ('./x.js', '/abs/x.js') are taken relative to the current directory.
 */
export function importFromCwd(specifier: string, cwd = process.cwd()): Promise<unknown> {
  if (specifier.startsWith('.') || isAbsolute(specifier)) return import(pathToFileURL(resolve(cwd, specifier)).href);
  const resolved = resolveFromDir(specifier, cwd);
  return import(resolved ? pathToFileURL(resolved).href : specifier);
}

/**
 * Loads a plugin module: its `qtkPlugin` (or default) export is registered; a module without one
 * counts when importing it registered something itself (a march package that registers at import).
 * A module that cannot be imported, or that adds no observer, fake-quant, fusion pattern or march,
 * is a usage error (exit code 2).
 */
export async function loadPlugin(
  specifier: string,
  load: (specifier: string) => Promise<unknown> = importFromCwd,
): Promise<void> {
  const before = registeredCount();
  let imported: Record<string, unknown> | undefined;
  try {
    await registerPluginModule(specifier, async (s) => {
      imported = (await load(s)) as Record<string, unknown>;
      return imported;
    });
  } catch (e) {
    if (imported === undefined) {
      const cause = e instanceof Error && e.cause instanceof Error ? e.cause : undefined;
      const code = (cause as { code?: unknown } | undefined)?.code;
      const firstLine = cause ? cause.message.split('\n')[0] : String(e);
      if (code === 'ERR_MODULE_NOT_FOUND' || code === 'ERR_PACKAGE_PATH_NOT_EXPORTED' || code === 'MODULE_NOT_FOUND')
        throw usageError('', `--plugin ${specifier}: cannot import the module (${firstLine}); is it installed?`);
      throw new CliError(`--plugin ${specifier}: importing the module failed: ${firstLine}`, { exitCode: 2, cause });
    }
    const exportsPlugin = imported.qtkPlugin !== undefined || imported.default !== undefined;
    if (exportsPlugin) throw new CliError(`--plugin ${specifier}: ${(e as Error).message}`, { exitCode: 2, cause: e });
  }
  if (registeredCount() === before) {
    throw usageError(
      '',
      `--plugin ${specifier}: the module registered nothing new (no observer, fake-quant, fusion pattern or march); ` +
        "a QTK plugin exports 'qtkPlugin' or registers into @qtk/spec's registries when imported",
    );
  }
}
