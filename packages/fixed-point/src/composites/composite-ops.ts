// One registry of the ops a march may run as a composite (march-semantics.md §1 "Composite ops"):
// where a march's capability table gives an op `impl: 'composite'`, prepare builds the entry's QAT
// form (or runs its graph rewrite) and convert uses the entry's rule. No march is named here; the
// table decides.
import type { Module } from '@qtk/nn';
import { PluginContractError, type CapabilityTable, type MarchPrepareContext } from '@qtk/spec';
import { Registry } from '@qtk/tensor';
import type { ConvertRule } from '../convert/march-converter.js';
import type { StepFakeQuant } from './qat-forms.js';

/** An op computed as a composite of simpler integer steps, each intermediate with its own scale. */
export interface CompositeOp {
  /** The capability-table op (the registry key): 'Softmax', 'LayerNormalization', 'Div', ... */
  readonly op: string;
  /** The QAT form of a float module that computes this op; null for any other module. */
  qatForm?(module: Module, step: StepFakeQuant): Module | null;
  /** A rewrite of the prepared graph (functional forms), run after the activation fake-quants are in. */
  prepare?(ctx: MarchPrepareContext): void;
  /** Converts the QAT form; absent when the rewrite leaves ops that other rules convert. */
  readonly rule?: ConvertRule;
}

/** The composite ops; register a new one with `compositeOps.register({ op, qatForm, rule })`. */
export const compositeOps = new Registry<CompositeOp>('composite op', {
  keyOf: (c) => c.op,
  check: (c) => {
    if (!c.qatForm && !c.prepare)
      throw new PluginContractError(
        `composite op '${c.op}': give a qatForm (module forms) or a prepare rewrite (graph forms)`,
      );
  },
});

/** Whether the table runs `op` as a composite. */
export function runsAsComposite(table: CapabilityTable, op: string): boolean {
  return table.ops.some((o) => o.op === op && o.impl === 'composite');
}

/** The composite ops this table runs as composites, in registration order. */
export function compositeOpsOf(table: CapabilityTable): CompositeOp[] {
  return compositeOps.list().filter((c) => runsAsComposite(table, c.op));
}

/** The QAT form of `module` from the first composite op of the table that has one for it, else null. */
export function compositeQatForm(table: CapabilityTable, module: Module, step: StepFakeQuant): Module | null {
  for (const c of compositeOpsOf(table)) {
    const form = c.qatForm?.(module, step);
    if (form) return form;
  }
  return null;
}
