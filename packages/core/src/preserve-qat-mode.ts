import { FusedConvBase } from '@qtk/fusion';
import type { Module } from '@qtk/nn';
import { InvalidArgumentError } from '@qtk/tensor';
import { QatModule } from './qat-module.js';
import { checkModuleNames, checkModuleTypeNames } from './module-names.js';
import { modelInfoOf } from './model-info.js';
import { findSubmodule } from '@qtk/ir';

// biome-ignore lint/suspicious/noExplicitAny: a constructor type that accepts every subclass, whatever its constructor parameters
type ModuleClass = abstract new (...a: any[]) => Module;

/** A module that may carry the mark: `module.preserveQatMode = true` works as setPreserveQatMode does. */
interface Markable {
  preserveQatMode?: unknown;
}

export interface PreserveRequest {
  readonly prefixes: readonly string[];
  readonly types: readonly (ModuleClass | string)[];
  readonly value: boolean;
}

/** Requests made on a model, replayed by prepareQatFx on the prepared model (names like `_generated_add_0` only exist there). */
const requests = new WeakMap<Module, PreserveRequest[]>();

/** The module's own mark, looking into a QAT module's float module and a fused module's conv. */
function ownMark(module: Module): boolean | undefined {
  const own = (module as Markable).preserveQatMode;
  if (typeof own === 'boolean') return own;
  if (module instanceof QatModule) return ownMark(module.module);
  if (module instanceof FusedConvBase) {
    const conv = (module.conv as Markable).preserveQatMode;
    if (typeof conv === 'boolean') return conv;
  }
  return undefined;
}

function innerOf(m: Module): Module {
  return m instanceof QatModule ? m.module : m;
}

function typeMatches(m: Module, types: readonly (ModuleClass | string)[]): boolean {
  const candidates = [m, innerOf(m)];
  const inner = innerOf(m);
  if (inner instanceof FusedConvBase) candidates.push(inner.conv as Module);
  return types.some((t) => candidates.some((c) => (typeof t === 'string' ? c.constructor.name === t : c instanceof t)));
}

function applyRequest(model: Module, request: PreserveRequest): string[] {
  const { prefixes, types, value } = request;
  const changed: string[] = [];
  for (const [name, m] of model.namedModules()) {
    if (name === '') continue;
    const byName = prefixes.some(
      (p) => name === p || name.startsWith(`${p}.`) || (p.endsWith('.') && name.startsWith(p)),
    );
    if (!byName && !typeMatches(m, types)) continue;
    (m as Markable).preserveQatMode = value;
    changed.push(name);
  }
  return changed;
}

/**
 * Marks modules to stay QAT modules in the converted model: their quantized inputs are dequantized
 * to float, they run as in QAT's VALIDATION state, and their output is quantized again with its
 * observed scale (single-op conversion debugging). A module is chosen when its qualified name starts
 * with one of `prefixes` (generated names such as `_generated_add_0` and FloatFunctionals included)
 * or its class is one of `types` (a class or a class name); a float class covers the QAT and fused
 * modules built from it (Conv2d covers a fused conv + bn + relu). Works on the float model (the
 * marks, and these requests for names that only prepare creates, carry over to prepareQatFx's
 * result) and on the prepared model. Setting `module.preserveQatMode = true` by hand works too; a
 * mark covers the module's children unless a child says otherwise. Returns the names it marked now.
 */
export function setPreserveQatMode(
  model: Module,
  prefixes: readonly string[] = [],
  types: readonly (ModuleClass | string)[] = [],
  value = true,
): string[] {
  if (!Array.isArray(prefixes) || !Array.isArray(types)) {
    throw new InvalidArgumentError(
      'setPreserveQatMode(model, prefixes, types, value): prefixes and types must be arrays',
    );
  }
  if (typeof value !== 'boolean')
    throw new InvalidArgumentError(`setPreserveQatMode: value must be true or false, got ${String(value)}`);
  const request: PreserveRequest = { prefixes: [...prefixes], types: [...types], value };
  // on a prepared model every name exists already; on a float one prepareQatFx checks (it creates names)
  if (modelInfoOf(model).kind === 'qat') checkPreserveRequests([request], [model]);
  requests.set(model, [...(requests.get(model) ?? []), request]);
  return applyRequest(model, request);
}

/** Refuses prefixes and class names that match no module of `models` (UnknownModuleNameError). */
export function checkPreserveRequests(list: readonly PreserveRequest[], models: readonly Module[]): void {
  for (const r of list) {
    checkModuleNames('setPreserveQatMode prefixes', r.prefixes, models);
    checkModuleTypeNames(
      'setPreserveQatMode types',
      r.types.filter((t): t is string => typeof t === 'string'),
      models,
    );
  }
}

/** The requests setPreserveQatMode recorded on `model`, in order. */
export function preserveRequestsOf(model: Module): readonly PreserveRequest[] {
  return requests.get(model) ?? [];
}

/** Replays requests (from the float model) on a prepared model; returns the names marked. */
export function replayPreserveRequests(model: Module, list: readonly PreserveRequest[]): string[] {
  const marked = new Set<string>();
  for (const r of list) for (const n of applyRequest(model, r)) marked.add(n);
  return [...marked];
}

/**
 * Whether the module at `path` of `root` stays a QAT module in conversion: the nearest mark on the
 * path decides (the module's own, then its parents').
 */
export function isPreservedAt(root: Module, path: string): boolean {
  const parts = path === '' ? [] : path.split('.');
  for (let k = parts.length; k >= 1; k--) {
    const m = findSubmodule(root, parts.slice(0, k).join('.'));
    if (!m) continue;
    const mark = ownMark(m);
    if (mark !== undefined) return mark;
  }
  return false;
}

/** Whether the module itself carries a preserve mark (its own, its float module's or its conv's). */
export function isPreserveQatMode(module: Module): boolean {
  return ownMark(module) === true;
}
