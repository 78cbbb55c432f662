import { Tensor } from '@qtk/tensor';
import { Module } from './module.js';
import { Parameter } from './parameter.js';

/**
 * Marks a class whose instances deepCopy copies field by field like modules (a prototype property
 * `[COPY_FIELDS] = true`): stateful helpers a module holds, such as observers and their histograms.
 * A registered symbol, so packages that do not depend on @qtk/nn can set it with `Symbol.for`.
 */
export const COPY_FIELDS: unique symbol = Symbol.for('qtk.deepCopy.fields') as never;

/**
 * A structural deep copy of a module tree (PyTorch's copy.deepcopy(model)), for preparing a model
 * while keeping the original: modules, parameters, buffers, arrays, maps, sets, plain objects and
 * instances of classes marked with COPY_FIELDS (observers) are copied (shared references stay
 * shared); functions, generators and other class instances are shared. Gradients are not copied.
 */
export function deepCopy<M extends Module>(module: M): M {
  return copyValue(module, new Map()) as M;
}

function copyValue(v: unknown, memo: Map<unknown, unknown>): unknown {
  if (v === null || typeof v !== 'object') return v;
  if (memo.has(v)) return memo.get(v);
  if (v instanceof Parameter) {
    const p = new Parameter(v.clone(), v.requiresGrad);
    memo.set(v, p);
    return p;
  }
  if (v instanceof Tensor) {
    const t = v.clone();
    memo.set(v, t);
    return t;
  }
  if (ArrayBuffer.isView(v)) {
    const c = (v as unknown as { slice(): unknown }).slice();
    memo.set(v, c);
    return c;
  }
  if (Array.isArray(v)) {
    const c: unknown[] = [];
    memo.set(v, c);
    for (const x of v) c.push(copyValue(x, memo));
    return c;
  }
  if (v instanceof Map) {
    const c = new Map();
    memo.set(v, c);
    for (const [k, x] of v) c.set(copyValue(k, memo), copyValue(x, memo));
    return c;
  }
  if (v instanceof Set) {
    const c = new Set();
    memo.set(v, c);
    for (const x of v) c.add(copyValue(x, memo));
    return c;
  }
  const proto = Object.getPrototypeOf(v);
  if (
    v instanceof Module ||
    proto === Object.prototype ||
    proto === null ||
    (v as Record<symbol, unknown>)[COPY_FIELDS] === true
  ) {
    const c = Object.create(proto) as object;
    memo.set(v, c);
    for (const key of Reflect.ownKeys(v)) {
      const d = Object.getOwnPropertyDescriptor(v, key)!;
      if ('value' in d) d.value = copyValue(d.value, memo);
      Object.defineProperty(c, key, d);
    }
    return c;
  }
  return v;
}
