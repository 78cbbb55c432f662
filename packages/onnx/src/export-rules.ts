import type { GraphModule } from '@qtk/ir';
import type { Module } from '@qtk/nn';
import type { ExportStep } from './export-modules.js';

/** What an export rule is given: the step of the walk, the module it exports and the method called (if any). */
export interface ModuleExportStep extends ExportStep {
  module: Module;
  method: string | undefined;
}

/** Writes one call of a module as ONNX nodes; returns the ONNX names of its outputs. */
export type ModuleExportRule = (step: ModuleExportStep) => string[];

// biome-ignore lint/suspicious/noExplicitAny: module classes take any constructor arguments
type ModuleClass = abstract new (...args: any[]) => Module;

const rules = new Map<ModuleClass, ModuleExportRule>();

/**
 * Registers how a module class (and its subclasses, unless they have their own rule) exports to ONNX.
 * Packages register the rules of their modules (fake-quant's QDQ, fixed-point's integer arithmetic);
 * a later registration of the same class replaces the earlier one.
 */
export function registerModuleExport(cls: ModuleClass, rule: ModuleExportRule): void {
  rules.set(cls, rule);
}

/** The rule registered for the module's class, else for its nearest base class. */
function nearestRule(table: Map<ModuleClass, ModuleExportRule>, m: Module): ModuleExportRule | undefined {
  for (let p = Object.getPrototypeOf(m); p && p !== Object.prototype; p = Object.getPrototypeOf(p)) {
    const rule = table.get(p.constructor as ModuleClass);
    if (rule) return rule;
  }
  return undefined;
}

/** The export rule of a module: its class's, else the nearest registered base class's. */
export function moduleExportRuleOf(m: Module): ModuleExportRule | undefined {
  return nearestRule(rules, m);
}

/** Whether a module class has an export rule of its own (not inherited). */
export function hasOwnModuleExport(cls: ModuleClass): boolean {
  return rules.has(cls);
}

const exactFloatRules = new Map<ModuleClass, ModuleExportRule>();

/**
 * Registers the form of a float module that computes what QTK's kernel computes bit for bit (same
 * float64 operations in the same order, one rounding to float32). The export uses these forms for the
 * float (CPU) parts of fixed-point models, where an integer that follows must not move by one step
 * because the runtime rounded differently.
 */
export function registerExactFloatExport(cls: ModuleClass, rule: ModuleExportRule): void {
  exactFloatRules.set(cls, rule);
}

/** The exact float form of a module's class (own or inherited), if one is registered. */
export function exactFloatRuleOf(m: Module): ModuleExportRule | undefined {
  return nearestRule(exactFloatRules, m);
}

/**
 * Prepares a model for the export walk and returns what undoes it. The walk runs the model once on the
 * example inputs; a setup makes that run compute what the exported model computes and leave the model
 * as it was (fake-quants: frozen scales, observers not fed).
 */
export type ExportSetup = (gm: GraphModule) => () => void;

const setups: ExportSetup[] = [];

/** Registers a setup run before every export walk (undone after it, last registered first); idempotent. */
export function registerExportSetup(setup: ExportSetup): void {
  if (!setups.includes(setup)) setups.push(setup);
}

/** Runs every registered setup on `gm`; the returned function undoes them in reverse order. */
export function runExportSetups(gm: GraphModule): () => void {
  const undo: (() => void)[] = [];
  const undoAll = () => {
    for (const u of undo.reverse()) u();
  };
  try {
    for (const s of setups) undo.push(s(gm));
  } catch (e) {
    undoAll();
    throw e;
  }
  return undoAll;
}

const exportedKinds = new Set<string>();

/**
 * Declares that the registered rules export models of a recorded kind (`gm.meta.kind`: 'qat', 'fixed-point').
 * The walk refuses a model of any other kind but float: its modules would fall back to their float forms.
 */
export function registerModelKindExport(kind: string): void {
  exportedKinds.add(kind);
}

/** Whether a package registered the export of models of this kind. */
export function isModelKindExported(kind: string): boolean {
  return exportedKinds.has(kind);
}
