// What the pre-quantization linter (checkModel) reports: each finding names the node and carries a
// fix a program can apply (a qconfig-dict or hybridDict delta, a prepare option) or, where only a
// code change helps, says what to change.

export type FindingSeverity = 'error' | 'warning' | 'info';

export type FindingCode =
  /** A chain prepare will fuse (nothing to do). */
  | 'unfused-pattern'
  /** A chain a pattern matches that stays unfused (a shared conv or BatchNorm, ...). */
  | 'fusion-blocked'
  /** A chain the march's table does not fuse. */
  | 'fusion-unsupported'
  /** A module called more than once: its calls share one output (and weight) scale. */
  | 'shared-module'
  /** An op the march's capability table cannot run. */
  | 'unsupported-op'
  /** A graph input reaches quantized ops without a QuantStub. */
  | 'missing-quant-stub'
  /** A quantized value reaches the model's output without a DeQuantStub. */
  | 'missing-dequant-stub'
  /** A qconfigDict.moduleName key that names no module. */
  | 'unknown-qconfig-name'
  /** A qconfigDict.moduleType class no module of the model is. */
  | 'unused-qconfig-type'
  /** A hybridDict.moduleName entry that names no module (prepareQatFx refuses it). */
  | 'unknown-hybrid-name'
  /** The conv / linear layer that produces a model output has an int8 / int16 output. */
  | 'output-not-high-precision';

/** A qconfig the fix describes by intent (resolved against the user's dict by applyModelFixes). */
export type QconfigPreset =
  /** The module's current qconfig without its output fake-quant: an int32 output. */
  'high-precision-output';

/** What to do with one qconfig-dict entry. */
export type QconfigEdit =
  | QconfigPreset
  /** Move the entry set under `renamedFrom` to this key. */
  | { readonly renamedFrom: string }
  /** Delete the entry. */
  | 'remove';

/** Changes to a qconfig dict, in its shape: `{ moduleName: { fc: 'high-precision-output' } }`. */
export interface QconfigDelta {
  readonly moduleName?: Readonly<Record<string, QconfigEdit>>;
  /** By class name. */
  readonly moduleType?: Readonly<Record<string, 'remove'>>;
}

/** Entries to add to (and remove from) a hybridDict (prepareQatFx's `hybridDict`, with `hybrid: true`). */
export interface HybridDelta {
  readonly moduleName?: readonly string[];
  readonly moduleType?: readonly string[];
  /** moduleName entries to delete. */
  readonly removeModuleName?: readonly string[];
}

/** prepareQatFx options a fix sets: input QuantStubs, or hybrid mode (the partitioner puts each op the march cannot run on the CPU). */
export type PrepareOptionFix = { readonly inputQuantStubs: true } | { readonly hybrid: true };

export type ModelFix =
  | { readonly kind: 'qconfig'; readonly qconfigDict: QconfigDelta }
  | { readonly kind: 'hybrid'; readonly hybridDict: HybridDelta }
  /** A prepareQatFx option to set. */
  | { readonly kind: 'prepare-option'; readonly option: PrepareOptionFix }
  /** prepareQatFx fuses this itself: nothing to do. */
  | { readonly kind: 'fuse'; readonly hint: string }
  /** Only a change to the model's code helps. */
  | { readonly kind: 'code'; readonly hint: string };

export interface Finding {
  readonly code: FindingCode;
  readonly severity: FindingSeverity;
  /** The module path (or node name) the finding is about. */
  readonly node: string;
  readonly message: string;
  readonly fix: ModelFix;
}
