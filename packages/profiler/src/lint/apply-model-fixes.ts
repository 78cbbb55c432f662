// Turns the linter's machine-applicable fixes into the arguments of prepareQatFx: the qconfig dict
// and hybridDict with the deltas merged in, and the prepare options the fixes ask for.
import { type HybridDict, moduleNameRecord, type QConfigDict } from '@qtk/core';
import { type QConfig, qconfig } from '@qtk/fake-quant';
import type { Module } from '@qtk/nn';
import { InvalidArgumentError } from '@qtk/tensor';
import { displayName, type LintOptions, lintContext } from './lint-context.js';
import type { Finding, QconfigDelta } from './lint-findings.js';

export interface AppliedModelFixes {
  /** The fixed qconfig dict, its `moduleName` a record whichever form the options gave. */
  readonly qconfigDict: QConfigDict & { readonly moduleName: Readonly<Record<string, QConfig | null>> };
  readonly hybridDict: HybridDict;
  /** Options for prepareQatFx next to `march`: `hybrid` when a hybridDict entry was added, `inputQuantStubs`. */
  readonly prepareOptions: { readonly hybrid?: true; readonly inputQuantStubs?: true };
  /** Findings whose fix is a code change or nothing at all (fusion prepare does itself). */
  readonly unapplied: readonly Finding[];
}

/**
 * Merges the fixes of `findings` (from checkModel on `floatModel` with the same `options`) into
 * copies of `options.qconfigDict` and `options.hybridDict`. A 'high-precision-output' entry is the
 * module's current qconfig without its activation fake-quant (its weight fake-quant kept).
 * Pass the result to prepareQatFx: `prepareQatFx(model, qconfigDict, { march, hybridDict, ...prepareOptions })`,
 * with `partitioner: hybridPartitioner` (from @qtk/hybrid) when `prepareOptions.hybrid` is set.
 */
export function applyModelFixes(
  floatModel: Module,
  findings: readonly Finding[],
  options: LintOptions,
): AppliedModelFixes {
  const ctx = lintContext(floatModel, options, 'applyModelFixes');
  const base = ctx.qconfigDict;
  const moduleName: Record<string, QConfig | null> = moduleNameRecord(base);
  let moduleType = [...(base.moduleType ?? [])];
  const hybridNames = [...(ctx.hybridDict.moduleName ?? [])];
  const hybridTypes = [...(ctx.hybridDict.moduleType ?? [])];
  const prepareOptions: { hybrid?: true; inputQuantStubs?: true } = options.hybrid ? { hybrid: true } : {};
  if (options.inputQuantStubs) prepareOptions.inputQuantStubs = true;
  const unapplied: Finding[] = [];

  const highPrecision = (name: string): QConfig | null => {
    const node = ctx.gm.graph.nodes.find((n) => n.op === 'call_module' && displayName(n) === name);
    if (!node)
      throw new InvalidArgumentError(
        `applyModelFixes: the model has no module '${name}'; pass the model and options checkModel was given`,
      );
    // an entry an earlier fix set (a corrected name) is the module's qconfig from now on
    const current = Object.hasOwn(moduleName, name) ? moduleName[name]! : ctx.qconfigOf(node).qconfig;
    if (current && current.activation === null) return current;
    return current ? qconfig(null, current.weight) : null;
  };
  const applyQconfig = (delta: QconfigDelta) => {
    for (const [key, edit] of Object.entries(delta.moduleName ?? {})) {
      if (edit === 'remove') delete moduleName[key];
      else if (edit === 'high-precision-output') {
        const q = highPrecision(key);
        if (q) moduleName[key] = q;
      } else {
        if (Object.hasOwn(moduleName, edit.renamedFrom)) moduleName[key] = moduleName[edit.renamedFrom]!;
        delete moduleName[edit.renamedFrom];
      }
    }
    for (const name of Object.keys(delta.moduleType ?? {})) moduleType = moduleType.filter(([c]) => c.name !== name);
  };

  for (const f of findings) {
    const fix = f.fix;
    if (fix.kind === 'qconfig') applyQconfig(fix.qconfigDict);
    else if (fix.kind === 'hybrid') {
      for (const n of fix.hybridDict.moduleName ?? []) if (!hybridNames.includes(n)) hybridNames.push(n);
      for (const t of fix.hybridDict.moduleType ?? []) if (!hybridTypes.includes(t)) hybridTypes.push(t);
      for (const n of fix.hybridDict.removeModuleName ?? []) {
        const i = hybridNames.indexOf(n);
        if (i >= 0) hybridNames.splice(i, 1);
      }
      prepareOptions.hybrid = true;
    } else if (fix.kind === 'prepare-option') Object.assign(prepareOptions, fix.option);
    else unapplied.push(f);
  }
  const qconfigDict: AppliedModelFixes['qconfigDict'] = {
    ...base,
    moduleName,
    ...(moduleType.length ? { moduleType } : {}),
  };
  if (!moduleType.length) delete (qconfigDict as { moduleType?: unknown }).moduleType;
  const hybridDict: HybridDict = {
    ...(hybridNames.length ? { moduleName: hybridNames } : {}),
    ...(hybridTypes.length ? { moduleType: hybridTypes } : {}),
  };
  return { qconfigDict, hybridDict, prepareOptions, unapplied };
}
