// Modules called only inside fxWrap-ed methods: the graph records such a method as one opaque
// call_module node, so these modules have no node of their own. Prepare and convert still give them
// their qconfig, QAT form and fixed-point form, as horizon_plugin_pytorch documents for RetinaNet's
// post-processing: the wrapped code runs for real and calls whatever module sits at the path.
import { findSubmodule, type GraphModule, type Node } from '@qtk/ir';
import type { Module } from '@qtk/nn';

/** Whether `node` calls an fxWrap-ed method (recorded opaque, never traced inside). */
export function isWrappedMethodCall(node: Node): boolean {
  return node.op === 'call_module' && node.method !== undefined && node.meta.impure === true;
}

const join = (owner: string, name: string) => (owner === '' ? name : name === '' ? owner : `${owner}.${name}`);

/**
 * The modules (path and module, parents before children) under the owners of fxWrap-ed methods
 * that no other node of the graph calls or reads, nor contains or lies inside of: those the wrapped
 * code may call. Empty when the graph has no wrapped method.
 */
export function modulesOnlyInWrappedMethods(gm: GraphModule): [string, Module][] {
  const owners = new Set(gm.graph.nodes.filter(isWrappedMethodCall).map((n) => n.target));
  if (owners.size === 0) return [];
  const refs = gm.graph.nodes
    .filter((n) => (n.op === 'call_module' && !isWrappedMethodCall(n)) || n.op === 'get_attr')
    .map((n) => n.target);
  const unreferenced = (path: string) =>
    !refs.some((r) => r === path || r.startsWith(`${path}.`) || path.startsWith(`${r}.`));
  const out = new Map<string, Module>();
  for (const owner of owners) {
    const ownerModule = findSubmodule(gm, owner);
    if (!ownerModule) continue;
    for (const [name, m] of ownerModule.namedModules()) {
      const path = join(owner, name);
      if (name !== '' && unreferenced(path) && !out.has(path)) out.set(path, m);
    }
  }
  return [...out];
}
