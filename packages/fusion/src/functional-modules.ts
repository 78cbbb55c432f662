// Functional arithmetic as generated FloatFunctional modules, so every add/sub/mul/div/cat/matmul has a
// module name (`_generated_add_0`, ...) that qconfig dicts, preserve-QAT marks and hybrid dicts can
// address, as horizon_plugin_pytorch's tracer does for `+` and `torch.add`.
import { findSubmodule, sanitizeName, type GraphModule, type Node } from '@qtk/ir';
import { FloatFunctional, type Module } from '@qtk/nn';
import { setModuleCopyOnWrite } from './module-tree.js';

/** Function / tensor-method names turned into FloatFunctional calls, each to the method of the same name. */
export const MODULEIZED_FUNCTIONS: readonly string[] = ['add', 'sub', 'mul', 'div', 'cat', 'matmul'];

/** What `node.meta.functional` holds on a node made by moduleizeFunctionalOps. */
export interface FunctionalOrigin {
  /** 'call_function' or 'call_method': how the op was written in the model. */
  readonly op: 'call_function' | 'call_method';
  readonly target: string;
}

/** The origin of a node that calls a generated FloatFunctional, or null for any other node. */
export function functionalOriginOf(node: Node): FunctionalOrigin | null {
  // stored as 'call_function:add' so it survives graph serialization (meta keeps JSON primitives)
  const m = /^(call_function|call_method):(.+)$/.exec(String(node.meta.functional ?? ''));
  return m ? { op: m[1] as FunctionalOrigin['op'], target: m[2]! } : null;
}

/** The first free `<scope>._generated_<op>_<k>` path. */
function freePath(gm: GraphModule, scope: string, op: string): string {
  let owner = findSubmodule(gm, scope);
  if (!owner) {
    owner = gm;
    scope = ''; // a scope that is not a module path (an imported graph): use the root
  }
  let k = 0;
  while (owner.getChild(`_generated_${op}_${k}`)) k++;
  return scope === '' ? `_generated_${op}_${k}` : `${scope}._generated_${op}_${k}`;
}

/**
 * Replaces each functional or tensor-method add / sub / mul / div / cat / matmul of `gm` with a call
 * to a new FloatFunctional, a child of the module whose forward made the call (its scope), named
 * `_generated_<op>_<k>` in graph (execution) order within that module: `_generated_add_0` for an add
 * in the model's own forward, `layer1._generated_add_0` for one in `layer1`'s. Arguments and scope
 * are kept; the node takes the module's name. Edits `gm` in place (call it on a copy): modules on
 * the way are cloned copy-on-write unless in `owned`, so the input model's modules stay unchanged.
 * Returns the new module paths.
 */
export function moduleizeFunctionalOps(gm: GraphModule, owned: Set<Module> = new Set()): string[] {
  const graph = gm.graph;
  const created: string[] = [];
  for (const node of [...graph.nodes]) {
    if (node.op !== 'call_function' && node.op !== 'call_method') continue;
    if (!MODULEIZED_FUNCTIONS.includes(node.target) || Object.keys(node.kwargs).length > 0) continue;
    const path = freePath(gm, node.scope, node.target);
    const module = new FloatFunctional();
    setModuleCopyOnWrite(gm, path, module, owned);
    owned.add(module);
    const call = graph.insertingBefore(node, () =>
      graph.callModule(path, node.args, {}, { method: node.target, scope: node.scope }),
    );
    // sourceName: the traced node it replaces, so tools can align the model with its float original
    call.meta = {
      ...node.meta,
      functional: `${node.op}:${node.target}`,
      sourceName: node.meta.sourceName ?? node.name,
    };
    node.replaceAllUsesWith(call);
    graph.eraseNode(node);
    const name = sanitizeName(path);
    if (!graph.node(name)) call.name = name;
    created.push(path);
  }
  return created;
}
