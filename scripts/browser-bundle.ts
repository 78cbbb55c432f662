// Bundles a module for the browser with esbuild and lists every import of a Node-only module it reaches:
// a Node built-in (`node:fs`, or a bare `fs` that no package's "browser" field maps away, as protobufjs's
// does) or onnxruntime-node. Library main entries must reach none (docs/decisions.md, "Browser bundling");
// scripts/browser-bundle.test.ts checks the sources, scripts/check-packages.ts the built dist files.
import { builtinModules } from 'node:module';
import { relative } from 'node:path';
import { build, type Metafile, type Plugin } from 'esbuild';

/** One import of a Node-only module, and how the entry reaches the file that makes it. */
export interface NodeOnlyImport {
  /** What is imported, as written: 'node:fs', 'zlib', 'onnxruntime-node'. */
  readonly specifier: string;
  /** The importing file, relative to `root`. */
  readonly importer: string;
  /** Files from the entry to the importer, relative to `root`. */
  readonly chain: readonly string[];
}

const BUILTINS = new Set(builtinModules);
const NODE_ONLY_PACKAGES = ['onnxruntime-node'];
const SKIP = Symbol('resolving without the check');

const isBuiltin = (specifier: string) => specifier.startsWith('node:') || BUILTINS.has(specifier);
const isNodeOnlyPackage = (specifier: string) =>
  NODE_ONLY_PACKAGES.some((p) => specifier === p || specifier.startsWith(`${p}/`));

/** Records Node-only imports and leaves them external, so the bundle completes and every one is listed. */
function nodeOnlyRecorder(found: { specifier: string; importer: string }[]): Plugin {
  return {
    name: 'qtk-node-only-imports',
    setup(b) {
      b.onResolve({ filter: /.*/ }, async (args) => {
        if (args.pluginData === SKIP) return undefined;
        const builtin = isBuiltin(args.path);
        if (!builtin && !isNodeOnlyPackage(args.path)) return undefined;
        if (builtin) {
          // a package's "browser" field may map the built-in to nothing or a shim: then esbuild resolves it
          const mapped = await b.resolve(args.path, {
            kind: args.kind,
            importer: args.importer,
            resolveDir: args.resolveDir,
            pluginData: SKIP,
          });
          if (mapped.errors.length === 0) return undefined;
        }
        found.push({ specifier: args.path, importer: args.importer });
        return { path: args.path, external: true };
      });
    },
  };
}

/** The shortest chain of imports from `entry` to `target` in the bundle's metafile (keys relative to cwd). */
function chainTo(metafile: Metafile, entry: string, target: string): string[] {
  const previous = new Map<string, string | null>([[entry, null]]);
  const queue = [entry];
  for (let file = queue.shift(); file !== undefined && !previous.has(target); file = queue.shift()) {
    for (const imported of metafile.inputs[file]?.imports ?? []) {
      if (imported.external || previous.has(imported.path)) continue;
      previous.set(imported.path, file);
      queue.push(imported.path);
    }
  }
  const chain: string[] = [];
  for (let at: string | null | undefined = target; at; at = previous.get(at)) chain.unshift(at);
  return chain;
}

export interface BrowserBundleOptions {
  /** Extra export conditions (the sources: ['qtk-source']). */
  readonly conditions?: readonly string[];
  /** Directory the reported paths are relative to (and esbuild's working directory). */
  readonly root: string;
}

/** Every Node-only import reached from `entry` when bundled for the browser; empty when the entry is clean. */
export async function nodeOnlyImports(entry: string, options: BrowserBundleOptions): Promise<NodeOnlyImport[]> {
  const found: { specifier: string; importer: string }[] = [];
  const result = await build({
    entryPoints: [entry],
    absWorkingDir: options.root,
    bundle: true,
    write: false,
    platform: 'browser',
    format: 'esm',
    conditions: [...(options.conditions ?? [])],
    metafile: true,
    logLevel: 'silent',
    plugins: [nodeOnlyRecorder(found)],
  });
  const rel = (file: string) => relative(options.root, file);
  const entryKey = rel(entry);
  const unique = new Map(found.map((f) => [`${f.specifier} ${f.importer}`, f]));
  return [...unique.values()]
    .map((f) => ({
      specifier: f.specifier,
      importer: rel(f.importer),
      chain: chainTo(result.metafile, entryKey, rel(f.importer)),
    }))
    .sort((a, b) => a.importer.localeCompare(b.importer) || a.specifier.localeCompare(b.specifier));
}

/** A report of `imports` for an error message: each module, the file importing it and how the entry gets there. */
export function describeNodeOnlyImports(entry: string, imports: readonly NodeOnlyImport[]): string {
  const lines = imports.map(
    (i) =>
      `  '${i.specifier}' imported by ${i.importer}${i.chain.length > 1 ? `\n    via ${i.chain.join(' → ')}` : ''}`,
  );
  return (
    `${entry} does not bundle for the browser: it reaches ${imports.length} import(s) of Node-only modules:\n${lines.join('\n')}\n` +
    "Keep the main entry platform-neutral (bytes in, bytes out) and move what needs Node to the package's ./node entry."
  );
}
