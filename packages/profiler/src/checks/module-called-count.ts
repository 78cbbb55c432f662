// How many times each module is called in one forward of the traced model (horizon_plugin_pytorch's
// get_module_called_count): a module called more than once shares its scales across its calls.
import type { Module } from '@qtk/nn';
import { subAt } from '@qtk/ir';
import { tracedGraphOf } from '../values/traced.js';

export interface ModuleCalls {
  /** The module path. */
  readonly name: string;
  /** The module class. */
  readonly type: string;
  readonly count: number;
  /** Names of the calling nodes, in execution order. */
  readonly nodes: readonly string[];
}

export interface ModuleCalledCountResult {
  readonly version: 1;
  /** Every called module, in the order of its first call. */
  readonly modules: readonly ModuleCalls[];
  /** The modules called more than once. */
  readonly shared: readonly ModuleCalls[];
}

/** Counts the calls of every module in the traced graph of `model` (a Module is traced first). */
export function getModuleCalledCount(model: Module): ModuleCalledCountResult {
  const gm = tracedGraphOf(model, 'getModuleCalledCount');
  const calls = new Map<string, { type: string; nodes: string[] }>();
  for (const n of gm.graph.nodes) {
    if (n.op !== 'call_module') continue;
    let entry = calls.get(n.target);
    if (!entry) {
      entry = { type: subAt(gm, n.target).constructor.name, nodes: [] };
      calls.set(n.target, entry);
    }
    entry.nodes.push(n.name);
  }
  const modules = [...calls].map(([name, { type, nodes }]) => ({ name, type, count: nodes.length, nodes }));
  return { version: 1, modules, shared: modules.filter((m) => m.count > 1) };
}
