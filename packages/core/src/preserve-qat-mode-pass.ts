import type { Module } from '@qtk/nn';
import type { PrepareContext } from './prepare-context.js';
import {
  checkPreserveRequests,
  isPreserveQatMode,
  preserveRequestsOf,
  replayPreserveRequests,
} from './preserve-qat-mode.js';
import { moduleOf } from './qconfig-of.js';
import { weightedLayer } from './qat-module.js';

/**
 * Carries preserve-QAT marks from the float model to the prepared one: a fused module is marked when
 * the conv or the add it absorbed was (a fused module with a BatchNorm holds a copy of the conv,
 * which has no mark of its own), then setPreserveQatMode's requests on the input model are replayed
 * on the prepared one, so prefixes reach names that only prepare creates (`_generated_add_0`) and
 * float types reach the QAT and fused modules built from them.
 */
export function carryPreserveQatModePass(ctx: PrepareContext): void {
  const { gm, source } = ctx;
  for (const node of gm.graph.nodes) {
    const from = node.meta.fusedFrom as readonly string[] | undefined;
    if (node.op !== 'call_module' || !from) continue;
    const marked = from.some((name) => {
      const src = source.graph.node(name);
      const m = src ? moduleOf(source, src) : null;
      return !!src && !!m && (weightedLayer(m) !== null || src.method === 'add') && isPreserveQatMode(m);
    });
    const target = moduleOf(gm, node) as (Module & { preserveQatMode?: unknown }) | null;
    if (marked && target && typeof target.preserveQatMode !== 'boolean') target.preserveQatMode = true;
  }
  const requests = [...preserveRequestsOf(ctx.input), ...(ctx.input === source ? [] : preserveRequestsOf(source))];
  replayPreserveRequests(gm, requests);
  checkPreserveRequests(requests, [source, gm]);
}
