// Which exported names of each workspace package are used outside it. For every package under packages/, the
// names its public entries export (every entry of its package.json `exports` map, re-exports included, as the
// TypeScript checker sees them) against the names imported from `@qtk/<pkg>` (any subpath) by source files of
// other packages, the apps, examples, bench, zoo and scripts. Test files of other packages count as users too: a
// name only another package's tests import is still reached through the public entry. A file belongs to the
// nearest package.json above it, so a fixture package inside packages/spec/fixtures is outside @qtk/spec.
// Usage: node --import tsx scripts/export-usage.ts [--json] [--unused PKG] [--root DIR]
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const SOURCE_EXTENSIONS = /\.(?:ts|tsx|mts|cts|js|mjs|cjs)$/;
const SKIPPED_DIRS = new Set(['node_modules', 'dist', '.git', '.turbo', 'coverage']);
const QTK_SPECIFIER = /^(@qtk\/[^/]+)(?:\/.*)?$/;

export interface PackageUsage {
  readonly name: string;
  /** Every name the package's public entries export, sorted. */
  readonly exported: readonly string[];
  /** Exported names imported by at least one file outside the package, sorted. */
  readonly usedOutside: readonly string[];
  /** Exported names no file outside the package imports, sorted. */
  readonly unusedOutside: readonly string[];
  /** Files outside that iterate the package's namespace (`Object.values(ns)`), reaching every name at run time. */
  readonly wholeNamespaceUsers: readonly string[];
}

interface Workspace {
  readonly root: string;
  readonly packages: readonly { name: string; dir: string; entries: string[] }[];
}

function readJson(file: string): Record<string, unknown> {
  return JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
}

/** The source file an `exports` target names: the development condition, else the types, else the import. */
function entrySource(dir: string, target: unknown): string | undefined {
  let path: unknown = target;
  if (target && typeof target === 'object') {
    const t = target as Record<string, unknown>;
    path = t['qtk-source'] ?? t.types ?? t.import ?? t.default;
  }
  if (typeof path !== 'string' || path.includes('*') || !/\.(?:d\.)?[mc]?ts$/.test(path)) return undefined;
  return resolve(dir, path);
}

function readWorkspace(root: string): Workspace {
  const packagesDir = join(root, 'packages');
  const packages = readdirSync(packagesDir)
    .sort()
    .filter((d) => existsSync(join(packagesDir, d, 'package.json')))
    .map((d) => {
      const dir = join(packagesDir, d);
      const manifest = readJson(join(dir, 'package.json'));
      const exportsMap = (manifest.exports ?? {}) as Record<string, unknown>;
      const entries = Object.values(exportsMap)
        .map((target) => entrySource(dir, target))
        .filter((f): f is string => f !== undefined && existsSync(f));
      return { name: String(manifest.name), dir, entries };
    });
  return { root, packages };
}

function compilerOptions(root: string): ts.CompilerOptions {
  const base = join(root, 'tsconfig.base.json');
  const fallback: ts.CompilerOptions = {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    customConditions: ['qtk-source'],
    skipLibCheck: true,
  };
  if (!existsSync(base)) return fallback;
  const parsed = ts.parseJsonConfigFileContent(ts.readConfigFile(base, ts.sys.readFile).config, ts.sys, root);
  return { ...parsed.options, noEmit: true, types: [] };
}

/** The names each package's public entries export, by package name. */
function exportedNames(ws: Workspace): Map<string, Set<string>> {
  const program = ts.createProgram(
    ws.packages.flatMap((p) => p.entries),
    compilerOptions(ws.root),
  );
  const checker = program.getTypeChecker();
  const out = new Map<string, Set<string>>();
  for (const p of ws.packages) {
    const names = new Set<string>();
    for (const entry of p.entries) {
      const file = program.getSourceFile(entry);
      const moduleSymbol = file && checker.getSymbolAtLocation(file);
      if (!moduleSymbol) continue;
      for (const s of checker.getExportsOfModule(moduleSymbol)) names.add(s.name);
    }
    out.set(p.name, names);
  }
  return out;
}

function sourceFiles(dir: string, out: string[] = []): string[] {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.isDirectory()) {
      if (!SKIPPED_DIRS.has(entry.name)) sourceFiles(join(dir, entry.name), out);
    } else if (SOURCE_EXTENSIONS.test(entry.name)) {
      out.push(join(dir, entry.name));
    }
  }
  return out;
}

/** The name of the package a file belongs to: the nearest package.json above it. */
function owningPackage(file: string, root: string, cache: Map<string, string>): string {
  let dir = dirname(file);
  const visited: string[] = [];
  let name = '';
  while (true) {
    const known = cache.get(dir);
    if (known !== undefined) {
      name = known;
      break;
    }
    visited.push(dir);
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest)) {
      name = String(readJson(manifest).name ?? '');
      break;
    }
    if (dir === root || dirname(dir) === dir) break;
    dir = dirname(dir);
  }
  for (const d of visited) cache.set(d, name);
  return name;
}

interface FileImports {
  /** Imported names by target package. */
  readonly names: Map<string, Set<string>>;
  /** Packages whose namespace the file uses as a value (iterated, passed on). */
  readonly wholeNamespace: Set<string>;
}

/** The names a file imports from `@qtk/*` packages: named imports, re-exports, namespace members. */
export function importsOf(
  fileName: string,
  text: string,
  packageOfPath: (specifier: string) => string | undefined = () => undefined,
): FileImports {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true);
  const names = new Map<string, Set<string>>();
  const wholeNamespace = new Set<string>();
  const namespaces = new Map<string, string>();
  const add = (pkg: string, name: string) => {
    const set = names.get(pkg) ?? new Set<string>();
    names.set(pkg, set);
    set.add(name);
  };
  const targetOf = (specifier: ts.Node | undefined) =>
    specifier && ts.isStringLiteral(specifier)
      ? (QTK_SPECIFIER.exec(specifier.text)?.[1] ?? packageOfPath(specifier.text))
      : undefined;

  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node)) {
      const pkg = targetOf(node.moduleSpecifier);
      const clause = node.importClause;
      if (pkg && clause) {
        if (clause.name) add(pkg, 'default');
        const bindings = clause.namedBindings;
        if (bindings && ts.isNamedImports(bindings)) {
          for (const e of bindings.elements) add(pkg, (e.propertyName ?? e.name).text);
        } else if (bindings && ts.isNamespaceImport(bindings)) {
          namespaces.set(bindings.name.text, pkg);
        }
      }
    } else if (ts.isExportDeclaration(node)) {
      const pkg = targetOf(node.moduleSpecifier);
      if (pkg && node.exportClause && ts.isNamedExports(node.exportClause)) {
        for (const e of node.exportClause.elements) add(pkg, (e.propertyName ?? e.name).text);
      } else if (pkg) {
        wholeNamespace.add(pkg);
      }
    } else if (ts.isImportTypeNode(node)) {
      const pkg = ts.isLiteralTypeNode(node.argument) ? targetOf(node.argument.literal) : undefined;
      if (pkg && node.qualifier)
        add(pkg, ts.isIdentifier(node.qualifier) ? node.qualifier.text : node.qualifier.left.getText());
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const pkg = targetOf(node.arguments[0]);
      if (pkg) dynamicImport(pkg, node);
    } else if (ts.isIdentifier(node) && namespaces.has(node.text) && !ts.isNamespaceImport(node.parent)) {
      const pkg = namespaces.get(node.text)!;
      const parent = node.parent;
      if (ts.isPropertyAccessExpression(parent) && parent.expression === node) add(pkg, parent.name.text);
      else if (ts.isQualifiedName(parent) && parent.left === node) add(pkg, parent.right.text);
      else wholeNamespace.add(pkg);
    }
    ts.forEachChild(node, visit);
  };

  // `const { a, b } = await import('@qtk/x')`: the destructured names; any other use reaches the whole module.
  const dynamicImport = (pkg: string, call: ts.CallExpression) => {
    const outer = ts.isAwaitExpression(call.parent) ? call.parent : call;
    const declaration = outer.parent;
    if (declaration && ts.isVariableDeclaration(declaration) && ts.isObjectBindingPattern(declaration.name)) {
      for (const e of declaration.name.elements) {
        const key = e.propertyName ?? e.name;
        if (ts.isIdentifier(key)) add(pkg, key.text);
      }
    } else if (!ts.isExpressionStatement(outer.parent)) {
      wholeNamespace.add(pkg);
    }
  };

  visit(source);
  return { names, wholeNamespace };
}

/** Exported, used-outside and unused-outside names of every package under `root`/packages. */
export function exportUsage(root: string): PackageUsage[] {
  const ws = readWorkspace(root);
  const exported = exportedNames(ws);
  const used = new Map<string, Set<string>>(ws.packages.map((p) => [p.name, new Set<string>()]));
  const whole = new Map<string, Set<string>>(ws.packages.map((p) => [p.name, new Set<string>()]));
  const owners = new Map<string, string>();
  // bench/ and a few scripts import an entry by its path ('../packages/tensor/src/index.js'): that is a use too
  const entryPackage = new Map<string, string>();
  for (const p of ws.packages) for (const e of p.entries) entryPackage.set(e.replace(/\.[mc]?ts$/, ''), p.name);
  for (const file of sourceFiles(root)) {
    const text = readFileSync(file, 'utf8');
    if (!text.includes('@qtk/') && !text.includes('/src/')) continue;
    const owner = owningPackage(file, root, owners);
    const packageOfPath = (specifier: string) =>
      specifier.startsWith('.')
        ? entryPackage.get(resolve(dirname(file), specifier).replace(/\.(?:[mc]?js|[mc]?ts)$/, ''))
        : undefined;
    const imports = importsOf(file, text, packageOfPath);
    for (const [pkg, names] of imports.names) {
      if (pkg === owner) continue;
      for (const n of names) used.get(pkg)?.add(n);
    }
    for (const pkg of imports.wholeNamespace) if (pkg !== owner) whole.get(pkg)?.add(relative(root, file));
  }
  return ws.packages.map((p) => {
    const all = [...(exported.get(p.name) ?? [])].sort();
    const usedNames = used.get(p.name)!;
    return {
      name: p.name,
      exported: all,
      usedOutside: all.filter((n) => usedNames.has(n)),
      unusedOutside: all.filter((n) => !usedNames.has(n)),
      wholeNamespaceUsers: [...whole.get(p.name)!].sort(),
    };
  });
}

export function formatTable(usage: readonly PackageUsage[]): string {
  const rows = usage.map((u) => [u.name, u.exported.length, u.usedOutside.length, u.unusedOutside.length]);
  const total = rows.reduce((s, r) => s + (r[3] as number), 0);
  const header = ['package', 'exported', 'used outside', 'unused outside'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)));
  const line = (cells: readonly (string | number)[]) =>
    cells.map((c, i) => (i === 0 ? String(c).padEnd(widths[i]!) : String(c).padStart(widths[i]!))).join('  ');
  return [line(header), ...rows.map(line), `${total} exported names are used nowhere outside their package`].join('\n');
}

function main(argv: readonly string[]): number {
  const rootFlag = argv.indexOf('--root');
  const root = resolve(rootFlag >= 0 ? argv[rootFlag + 1]! : join(dirname(fileURLToPath(import.meta.url)), '..'));
  const usage = exportUsage(root);
  const unusedFlag = argv.indexOf('--unused');
  if (unusedFlag >= 0) {
    const wanted = argv[unusedFlag + 1] ?? '';
    const name = wanted.startsWith('@') ? wanted : `@qtk/${wanted}`;
    const pkg = usage.find((u) => u.name === name);
    if (!pkg) {
      console.error(`export-usage: no package ${name}; one of ${usage.map((u) => u.name).join(', ')}`);
      return 2;
    }
    if (argv.includes('--json')) console.log(JSON.stringify(pkg.unusedOutside, null, 2));
    else console.log(pkg.unusedOutside.join('\n'));
    return 0;
  }
  if (argv.includes('--json')) {
    console.log(JSON.stringify(usage, null, 2));
    return 0;
  }
  console.log(formatTable(usage));
  for (const u of usage) {
    if (u.wholeNamespaceUsers.length) {
      console.log(`${u.name}: every name reachable by ${u.wholeNamespaceUsers.join(', ')} (namespace used as a value)`);
    }
  }
  return 0;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  process.exitCode = main(process.argv.slice(2));
}
