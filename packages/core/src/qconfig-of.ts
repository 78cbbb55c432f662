import type { QConfig } from '@qtk/fake-quant';
import { FusedConvBase, functionalOriginOf } from '@qtk/fusion';
import { findSubmodule, type GraphModule, type Node } from '@qtk/ir';
import type { Module } from '@qtk/nn';
import { deployDeviceOf } from './deploy-device.js';
import type { PrepareContext } from './prepare-context.js';
import { weightedLayer } from './qat-module.js';

export function moduleOf(gm: GraphModule, node: Node): Module | null {
  return node.op === 'call_module' ? findSubmodule(gm, node.target) : null;
}

/** Qualified path used for qconfig lookup: the module of a call_module, else the scope that created the node. */
export function pathOf(node: Node): string {
  return node.op === 'call_module' ? node.target : node.scope;
}

/** The module path of the conv-family layer a fused node absorbed (from the traced source), or null. */
function fusedLayerPath(ctx: PrepareContext, node: Node): string | null {
  const from = node.meta.fusedFrom as readonly string[] | undefined;
  for (const name of from ?? []) {
    const src = ctx.source.graph.node(name);
    const m = src ? moduleOf(ctx.source, src) : null;
    if (src && m && weightedLayer(m)) return src.target;
  }
  return null;
}

export interface NodeQconfig {
  readonly qconfig: QConfig | null;
  /** The module path that decided it (for messages). */
  readonly path: string;
}

/**
 * The qconfig a node takes: null on a node placed on the CPU (hybrid); a qconfig setter's, when one
 * set this node (prepareQatFx's `qconfigSetter` form). A qconfig set for the node's own module path (its `qconfig` property or
 * a `moduleName` entry, e.g. `_generated_add_0`) wins. Otherwise: a fused module takes its conv's
 * (horizon_plugin_pytorch's fused modules keep the conv's qconfig); a generated FloatFunctional (a
 * functional add, ...) and any other function takes the qconfig of the module whose forward called
 * it; any other module its own, inherited from its parents.
 */
export function qconfigOf(ctx: PrepareContext, node: Node): NodeQconfig {
  // a node the hybrid partition put on the CPU stays float: step-wise quantization's null qconfig
  if (deployDeviceOf(node) === 'CPU') return { qconfig: null, path: pathOf(node) };
  const set = ctx.nodeQconfigs?.get(node);
  if (set !== undefined) return { qconfig: set, path: pathOf(node) };
  if (node.op === 'call_module') {
    const own = ctx.resolver.explicit(node.target);
    if (own !== undefined) return { qconfig: own, path: node.target };
    const module = moduleOf(ctx.gm, node);
    const layer = fusedLayerPath(ctx, node);
    if (layer !== null) {
      const hints = module instanceof FusedConvBase ? [module.conv as Module] : [];
      return { qconfig: ctx.resolver.resolve(layer, hints), path: layer };
    }
    if (functionalOriginOf(node))
      return { qconfig: ctx.resolver.resolve(node.scope, module ? [module] : []), path: node.target };
  }
  const path = pathOf(node);
  return { qconfig: ctx.resolver.resolve(path), path };
}
