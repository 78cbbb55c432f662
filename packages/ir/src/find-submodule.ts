import type { Module } from '@qtk/nn';

/**
 * The module at a dotted path under `root` ('' is `root` itself), or null where the path names no
 * module: for the many places where a missing module is an answer, not an error (a node target that
 * is not a module path, a scope of an imported graph). Module.getSubmodule throws instead.
 */
export function findSubmodule(root: Module, target: string): Module | null {
  if (target === '') return root;
  let module: Module = root;
  for (const part of target.split('.')) {
    const child = module.getChild(part);
    if (!child) return null;
    module = child;
  }
  return module;
}
