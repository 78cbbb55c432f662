// Copy-on-write edits of a module tree, so fusing a GraphModule leaves the input's modules untouched.
import type { Module } from '@qtk/nn';
import { InvalidArgumentError } from '@qtk/tensor';

/**
 * A new object of the module's class with the same fields: children, parameters and buffers are
 * the same instances (shared); maps, sets and arrays are copied one level, so registering or
 * replacing a child (containers keep children in a Map) does not show in the original.
 */
export function shallowCloneModule<M extends Module>(module: M): M {
  const copy = Object.create(Object.getPrototypeOf(module)) as M;
  for (const key of Reflect.ownKeys(module)) {
    const d = Object.getOwnPropertyDescriptor(module, key)!;
    if ('value' in d) {
      const v: unknown = d.value;
      if (v instanceof Map) d.value = new Map(v);
      else if (v instanceof Set) d.value = new Set(v);
      else if (Array.isArray(v)) d.value = [...v];
    }
    Object.defineProperty(copy, key, d);
  }
  return copy;
}

/**
 * Sets the module at a dotted path of `root`, cloning (shallowCloneModule) every module on the way
 * that is not in `owned`, so modules shared with another tree are never changed. Clones are added
 * to `owned`; pass the same set for a series of edits. `root` itself is edited in place.
 */
export function setModuleCopyOnWrite(root: Module, path: string, module: Module, owned: Set<Module>): void {
  const parts = path.split('.');
  let owner = root;
  for (const p of parts.slice(0, -1)) {
    let child = owner.getChild(p);
    if (!child) throw new InvalidArgumentError(`setModuleCopyOnWrite: no module '${p}' on the path '${path}'`);
    if (!owned.has(child)) {
      child = shallowCloneModule(child);
      owned.add(child);
      owner.setChild(p, child);
    }
    owner = child;
  }
  owner.setChild(parts[parts.length - 1]!, module);
}
