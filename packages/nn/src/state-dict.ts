import { noGrad, Tensor } from '@qtk/tensor';
import { StateDictError, type ShapeMismatch } from './errors.js';
import type { Module } from './module.js';
import { Parameter } from './parameter.js';

export const STATE_DICT_VERSION = 1;

/** A JSON-serialisable value (a module's extra state). */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** How a module's extra state is named in missing / unexpected keys, after PyTorch ('fq._extra_state'). */
export const EXTRA_STATE_KEY = '_extra_state';

/** A module's parameters and persistent buffers by qualified name ('layer1.bn1.runningMean': camelCase, the TypeScript field names). */
export interface StateDict {
  version: typeof STATE_DICT_VERSION;
  tensors: Record<string, Tensor>;
  /**
   * Each module's extra state (`Module.extraState()`: observer statistics, ...) by module path
   * ('' for the root). Absent from a dict made before extra states existed (a version-1 file): then
   * no extra state is checked or loaded.
   */
  extra?: Record<string, JsonValue>;
  /** Free-form JSON-serialisable extras (epoch, metrics, ...) kept by the file format. */
  metadata?: Record<string, unknown>;
}

export interface LoadStateDictOptions {
  /**
   * Missing and unexpected keys throw (default true); when false they are returned instead. Extra
   * states count as keys named '<module path>._extra_state', when the dict has an `extra` record.
   */
  strict?: boolean;
}

export interface LoadStateDictResult {
  missingKeys: string[];
  unexpectedKeys: string[];
}

interface Slot {
  owner: Module;
  name: string;
  tensor: Tensor;
}

interface Slots {
  tensors: Map<string, Slot>;
  /** Modules with an extra state, by path, with that state. */
  extra: Map<string, { module: Module; state: JsonValue }>;
}

/** Every tensor and extra state the state dict of `module` holds (own parameters, buffers, then children). */
function slots(module: Module, prefix: string, out: Slots, stack: Set<Module>): Slots {
  if (stack.has(module)) return out; // a module that contains itself: stop instead of recursing forever
  stack.add(module);
  const key = (n: string) => (prefix ? `${prefix}.${n}` : n);
  for (const [name, p] of module.ownParameters()) out.tensors.set(key(name), { owner: module, name, tensor: p });
  for (const [name, b, persistent] of module.ownBuffers()) {
    if (persistent) out.tensors.set(key(name), { owner: module, name, tensor: b });
  }
  const state = module.extraState();
  if (state !== undefined) out.extra.set(prefix, { module, state });
  for (const [name, child] of module.namedChildren()) slots(child, key(name), out, stack);
  stack.delete(module);
  return out;
}

const allSlots = (module: Module, prefix: string): Slots =>
  slots(module, prefix, { tensors: new Map(), extra: new Map() }, new Set());

const extraKey = (path: string) => (path ? `${path}.${EXTRA_STATE_KEY}` : EXTRA_STATE_KEY);

export function collectStateDict(module: Module, prefix: string, clone: boolean): StateDict {
  const found = allSlots(module, prefix);
  const tensors: Record<string, Tensor> = {};
  for (const [k, s] of found.tensors) tensors[k] = clone ? s.tensor.clone() : s.tensor.detach();
  const extra: Record<string, JsonValue> = {};
  for (const [path, e] of found.extra) extra[path] = e.state;
  return { version: STATE_DICT_VERSION, tensors, extra };
}

export function isStateDict(value: unknown): value is StateDict {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as { version?: unknown; tensors?: unknown; extra?: unknown };
  return (
    v.version === STATE_DICT_VERSION &&
    typeof v.tensors === 'object' &&
    v.tensors !== null &&
    (v.extra === undefined || (typeof v.extra === 'object' && v.extra !== null && !Array.isArray(v.extra)))
  );
}

export function loadIntoModule(module: Module, sd: StateDict, options: LoadStateDictOptions): LoadStateDictResult {
  const strict = options.strict ?? true;
  if (!isStateDict(sd)) {
    const version = (sd as { version?: unknown } | null)?.version;
    throw new StateDictError({
      detail:
        version !== undefined && version !== STATE_DICT_VERSION
          ? `unsupported state dict version ${String(version)} (this build reads version ${STATE_DICT_VERSION})`
          : `expected { version: ${STATE_DICT_VERSION}, tensors: {...}, extra?: {...} }`,
    });
  }
  const found = allSlots(module, '');
  const expected = found.tensors;
  const missingKeys: string[] = [];
  const shapeMismatches: ShapeMismatch[] = [];
  for (const [key, slot] of expected) {
    const src = sd.tensors[key];
    if (!src) {
      missingKeys.push(key);
      continue;
    }
    if (!(src instanceof Tensor)) {
      throw new StateDictError({ detail: `entry '${key}' is not a Tensor` });
    }
    const a = slot.tensor.shape;
    const b = src.shape;
    if (a.length !== b.length || a.some((d, i) => d !== b[i])) shapeMismatches.push({ key, expected: a, got: b });
  }
  const unexpectedKeys = Object.keys(sd.tensors).filter((k) => !expected.has(k));
  const extra = sd.extra;
  if (extra !== undefined) {
    for (const path of found.extra.keys()) if (!Object.hasOwn(extra, path)) missingKeys.push(extraKey(path));
    for (const path of Object.keys(extra)) if (!found.extra.has(path)) unexpectedKeys.push(extraKey(path));
  }
  if (shapeMismatches.length || (strict && (missingKeys.length || unexpectedKeys.length))) {
    throw strict
      ? new StateDictError({ missingKeys, unexpectedKeys, shapeMismatches })
      : new StateDictError({ shapeMismatches });
  }
  noGrad(() => {
    for (const [key, slot] of expected) {
      const src = sd.tensors[key];
      if (!src) continue;
      const dst = slot.tensor;
      if (dst.isContiguous() && dst.data.length >= dst.offset + dst.size) {
        // In place, so optimizers holding the parameter objects keep working.
        dst.data.set(src.values(), dst.offset);
      } else {
        const copy = src.clone().toType(dst.dtype);
        (slot.owner as unknown as Record<string, unknown>)[slot.name] =
          dst instanceof Parameter ? new Parameter(copy, dst.requiresGrad) : copy;
      }
    }
  });
  // After the tensors: a module may read them while restoring (a fake-quant resumes from its scale).
  if (extra !== undefined) {
    for (const [path, { module: m }] of found.extra) {
      if (!Object.hasOwn(extra, path)) continue;
      try {
        m.loadExtraState(extra[path]!);
      } catch (cause) {
        throw new StateDictError(
          {
            detail: `the extra state of '${path || '(root)'}' (${m.constructor.name}) cannot be loaded: ${(cause as Error).message}`,
          },
          { cause },
        );
      }
    }
  }
  return { missingKeys, unexpectedKeys };
}
