// The prepare passes that come from the march: its graph rewrites (hooks.prepareRewrites), the
// prepare rewrites of the composite ops its table runs as composites (compositeOps), and its own
// passes (hooks.preparePasses). Core names no march: the table and the hooks decide.
import { compositeOpsOf } from '@qtk/fixed-point';
import type { Node } from '@qtk/ir';
import { QConfigError, type MarchPrepareContext } from '@qtk/spec';
import type { PrepareContext } from './prepare-context.js';
import { createFakeQuant } from './prepare-passes.js';
import { qconfigOf } from './qconfig-of.js';

/** The march's view of a prepare: the graph, the quantized set and fake-quants from the node's qconfig. */
export function marchPrepareContext(ctx: PrepareContext): MarchPrepareContext {
  return {
    gm: ctx.gm,
    march: ctx.march,
    quantized: ctx.quantized,
    intermediateFakeQuant(node: Node, options = {}) {
      const factory = qconfigOf(ctx, node).qconfig?.activation;
      const dtype = options.dtype;
      if (dtype === 'qint32')
        throw new QConfigError(`${node.name}: an intermediate fake-quant is qint8 or qint16, not qint32`, {
          module: node.name,
        });
      return factory ? createFakeQuant(factory, node.name, dtype ? { dtype } : {}) : null;
    },
    warn: (m) => ctx.warn(m),
  };
}

/** Runs the march's `prepareRewrites` on the fused float graph (before the QAT swap). */
export function marchRewritesPass(ctx: PrepareContext): void {
  for (const r of ctx.march.hooks.prepareRewrites ?? []) r.run(ctx.gm);
}

/** Runs the prepare rewrite of every composite op the march's table runs as a composite (div → x · reciprocal(y)). */
export function compositeRewritesPass(ctx: PrepareContext): void {
  const mctx = marchPrepareContext(ctx);
  for (const c of compositeOpsOf(ctx.march.capabilities)) c.prepare?.(mctx);
}

/**
 * Runs the march's `preparePasses` (after the activation fake-quants are in, before the checks), then with
 * `optimizeGraph` its `optimizeGraphPasses`.
 */
export function marchPreparePassesPass(ctx: PrepareContext): void {
  const { hooks } = ctx.march;
  const passes = [...(hooks.preparePasses ?? []), ...(ctx.optimizeGraph ? (hooks.optimizeGraphPasses ?? []) : [])];
  if (passes.length === 0) return;
  const mctx = marchPrepareContext(ctx);
  for (const p of passes) p.run(mctx);
}
