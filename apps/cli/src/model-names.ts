// The names of an imported model's nodes in the forms a user knows: QTK's module names, the ONNX node
// names, and the PyTorch module paths those encode. Tables show the source name beside QTK's; name
// options (--cpu-nodes, --keep-float, --qconfig moduleName entries) accept any form.
import { prepareQatFx } from '@qtk/core';
import { defaultQatQconfig } from '@qtk/fake-quant';
import { type GraphModule, importedNamesOf, sanitizeName } from '@qtk/ir';
import { pytorchModulePath } from '@qtk/onnx';
import { closeNames } from '@qtk/tensor';
import { CliError } from './io.js';

/** How a node is known in the file it came from: the PyTorch module path its ONNX name encodes, else that name. */
export function shownSourceName(onnxName: string): string {
  return pytorchModulePath(onnxName) ?? onnxName;
}

/** The header of the source-name column. */
export const SOURCE_COLUMN = 'source name';

export class ModelNames {
  /** QTK node or module name → the ONNX names it stands for (first op first). */
  private readonly imported = new Map<string, readonly string[]>();
  /** ONNX node name or PyTorch module path → the module names of the nodes it names. */
  private readonly modulesBySource = new Map<string, Set<string>>();
  private readonly moduleNames = new Set<string>();
  /** The module names of the first model's nodes (the prepared one, for afterFusion). */
  private readonly firstModuleNames = new Set<string>();

  /**
   * The names of the models' nodes (any stage: imported, fused, prepared, converted, loaded from a model
   * file); where two models have a node of one name, the first model's names count.
   */
  constructor(...models: GraphModule[]) {
    for (const node of models.flatMap((gm) => gm.graph.nodes)) {
      const names = importedNamesOf(node);
      if (node.op === 'call_module') this.moduleNames.add(node.target);
      if (node.op === 'call_module' && node.graph === models[0]?.graph) this.firstModuleNames.add(node.target);
      if (names.length === 0) continue;
      if (!this.imported.has(node.name)) this.imported.set(node.name, names);
      if (node.op !== 'call_module') continue;
      if (!this.imported.has(node.target)) this.imported.set(node.target, names);
      for (const onnxName of names)
        for (const key of [onnxName, pytorchModulePath(onnxName)])
          if (key) this.modulesBySource.set(key, (this.modulesBySource.get(key) ?? new Set()).add(node.target));
    }
  }

  /**
   * The names of `float` and of its fused nodes for `march` (a fused conv + relu sits at the relu's name and
   * shows the conv's source name), for tables of a prepared model's nodes. A model that cannot be prepared
   * gets its float names.
   */
  static afterFusion(float: GraphModule, march: string): ModelNames {
    try {
      const prepared = prepareQatFx(float, { global: defaultQatQconfig }, { march, inputQuantStubs: true });
      return new ModelNames(prepared, float);
    } catch {
      return new ModelNames(float);
    }
  }

  /** Whether any node records a name from its file (a model imported from ONNX with named nodes). */
  get hasSourceNames(): boolean {
    return this.imported.size > 0;
  }

  /**
   * Whether the file's names tell a user something QTK's do not: some ONNX name is not in QTK's form
   * (a PyTorch export's '/layer1/layer1.0/conv1/Conv'; not a file QTK exported, whose names are QTK's).
   * Tables add the source column only then.
   */
  get addsNames(): boolean {
    for (const names of this.imported.values()) if (names.some((n) => sanitizeName(n) !== n)) return true;
    return false;
  }

  /** A table column of source names for the rows named `names`, or null when the file's names add nothing. */
  column(names: readonly string[]): string[] | null {
    return this.addsNames ? names.map((n) => this.sourceOf(n) || '-') : null;
  }

  /**
   * `header` and `rows` with the source column after column `at` (which holds QTK node or module names),
   * when the file's names add something; else as they are.
   */
  withColumn(header: readonly string[], rows: readonly (readonly string[])[], at = 0): [string[], string[][]] {
    const column = this.column(rows.map((r) => r[at] ?? ''));
    const insert = <T>(cells: readonly T[], cell: T) => [...cells.slice(0, at + 1), cell, ...cells.slice(at + 1)];
    if (!column) return [[...header], rows.map((r) => [...r])];
    return [insert(header, SOURCE_COLUMN), rows.map((r, i) => insert(r, column[i]!))];
  }

  /** `text` with each QTK node name in it followed by its source name in brackets: 'conv_0 [layer1.0.conv1]'. */
  annotate(text: string): string {
    if (!this.addsNames) return text;
    const names = [...this.imported.keys()].filter((n) => this.sourceOf(n) !== n).sort((a, b) => b.length - a.length);
    if (names.length === 0) return text;
    const escaped = names.map((n) => n.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
    const pattern = new RegExp(`(?<![\\w.])(${escaped.join('|')})(?![\\w.])`, 'g');
    return text.replace(pattern, (name) => `${name} [${this.sourceOf(name)}]`);
  }

  /** The name to show beside QTK's `name` (a node or module name): its first op's source name; '' when none. */
  sourceOf(name: string): string {
    const first = this.imported.get(name)?.[0];
    return first === undefined ? '' : shownSourceName(first);
  }

  /**
   * The module names an entry of a name option stands for: a QTK module name as it is; an ONNX node name
   * or a PyTorch module path, every module it names; a PyTorch path prefix ('features.7'), every module
   * under it (as PyTorch's qconfig `module_name`). Null when it names nothing.
   */
  resolve(entry: string): string[] | null {
    if (this.moduleNames.has(entry)) return [entry];
    const found = new Set(this.modulesBySource.get(entry));
    for (const [key, modules] of this.modulesBySource)
      if (!key.startsWith('/') && key.startsWith(`${entry}.`)) for (const m of modules) found.add(m);
    return found.size ? [...found] : null;
  }

  /**
   * resolve for every entry; an entry that names nothing stays as it is, so the library's check names it
   * (and withSuggestions adds the file's closest names). `preparedOnly`: only modules of the first model's
   * graph (afterFusion's prepared model), for options the profiler reads on the prepared model.
   */
  resolveAll(entries: readonly string[], options: { preparedOnly?: boolean } = {}): string[] {
    const keep = (m: string) => !options.preparedOnly || this.firstModuleNames.has(m);
    return [
      ...new Set(
        entries.flatMap((entry) => {
          const found = (this.resolve(entry) ?? []).filter(keep);
          return found.length ? found : [entry];
        }),
      ),
    ];
  }

  /**
   * `e` (a library's error for a name entry that matched nothing) with the closest ONNX node names and
   * PyTorch module paths added, when the model has such names; else `e` itself.
   */
  withSuggestions(e: Error, entry: string): Error {
    if (!this.addsNames) return e;
    const close = closeNames(entry, this.sourceKeys(), 3);
    if (close.length === 0) return e;
    return new CliError(
      `${e.message}\nnames of the ONNX file work too: did you mean ${close.map((n) => `'${n}'`).join(' or ')}?`,
      { cause: e, exitCode: e instanceof CliError ? e.exitCode : 1 },
    );
  }

  /** The ONNX node names and PyTorch module paths, with every module path's prefixes ('features.7'). */
  private sourceKeys(): string[] {
    const keys = new Set<string>();
    for (const key of this.modulesBySource.keys()) {
      keys.add(key);
      if (key.startsWith('/')) continue;
      const parts = key.split('.');
      for (let i = 1; i < parts.length; i++) keys.add(parts.slice(0, i).join('.'));
    }
    return [...keys];
  }
}
