import { noGrad, Tensor } from '@qtk/tensor';
import { StateDictError, type ShapeMismatch } from './errors.js';
import type { Module } from './module.js';
import { Parameter } from './parameter.js';

export const STATE_DICT_VERSION = 1;

/** A module's parameters and persistent buffers by qualified name ('layer1.bn1.running_mean' style). */
export interface StateDict {
  version: typeof STATE_DICT_VERSION;
  tensors: Record<string, Tensor>;
  /** Free-form JSON-serialisable extras (epoch, metrics, ...) kept by the file format. */
  metadata?: Record<string, unknown>;
}

export interface LoadStateDictOptions {
  /** Missing and unexpected keys throw (default true); when false they are returned instead. */
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

/** Every tensor the state dict of `module` holds, keyed by qualified name (own parameters, buffers, then children). */
function slots(module: Module, prefix: string, out: Map<string, Slot>, stack: Set<Module>): Map<string, Slot> {
  if (stack.has(module)) return out; // a module that contains itself: stop instead of recursing forever
  stack.add(module);
  const key = (n: string) => (prefix ? `${prefix}.${n}` : n);
  for (const [name, p] of module.ownParameters()) out.set(key(name), { owner: module, name, tensor: p });
  for (const [name, b, persistent] of module.ownBuffers()) {
    if (persistent) out.set(key(name), { owner: module, name, tensor: b });
  }
  for (const [name, child] of module.namedChildren()) slots(child, key(name), out, stack);
  stack.delete(module);
  return out;
}

export function collectStateDict(module: Module, prefix: string, clone: boolean): StateDict {
  const tensors: Record<string, Tensor> = {};
  for (const [k, s] of slots(module, prefix, new Map(), new Set())) tensors[k] = clone ? s.tensor.clone() : s.tensor.detach();
  return { version: STATE_DICT_VERSION, tensors };
}

export function isStateDict(value: unknown): value is StateDict {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as { version?: unknown; tensors?: unknown };
  return v.version === STATE_DICT_VERSION && typeof v.tensors === 'object' && v.tensors !== null;
}

export function loadIntoModule(module: Module, sd: StateDict, options: LoadStateDictOptions): LoadStateDictResult {
  const strict = options.strict ?? true;
  if (!isStateDict(sd)) {
    const version = (sd as { version?: unknown } | null)?.version;
    throw new StateDictError({
      detail:
        version !== undefined && version !== STATE_DICT_VERSION
          ? `unsupported state dict version ${String(version)} (this build reads version ${STATE_DICT_VERSION})`
          : `expected { version: ${STATE_DICT_VERSION}, tensors: {...} }`,
    });
  }
  const expected = slots(module, '', new Map(), new Set());
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
        (slot.owner as unknown as Record<string, unknown>)[slot.name] = dst instanceof Parameter ? new Parameter(copy, dst.requiresGrad) : copy;
      }
    }
  });
  return { missingKeys, unexpectedKeys };
}
