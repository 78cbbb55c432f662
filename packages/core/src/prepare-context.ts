import type { QConfig } from '@qtk/fake-quant';
import type { GraphModule, Node } from '@qtk/ir';
import type { Module } from '@qtk/nn';
import type { MarchBackendV1 } from '@qtk/spec';
import type { HybridDict } from './deploy-device.js';
import type { QconfigResolver } from './qconfig-dict.js';

/** What every prepare pass sees. Passes edit `gm` in place. */
export interface PrepareContext {
  readonly gm: GraphModule;
  /** The model given to prepareQatFx (a float Module or GraphModule). */
  readonly input: Module;
  /** The traced model before fusion (fused nodes' `meta.fusedFrom` names its nodes). */
  readonly source: GraphModule;
  readonly resolver: QconfigResolver;
  /** The march prepare checks against (the `march` option, else setMarch's); prepare requires one. */
  readonly march: MarchBackendV1;
  /** Nodes whose output is fake-quantized (QAT modules and inserted activation fake-quants). */
  readonly quantized: Set<Node>;
  /**
   * Containers this prepare cloned (copy-on-write): replace modules with
   * `setModuleCopyOnWrite(ctx.gm, path, module, ctx.owned)` so the input model's containers stay unchanged.
   */
  readonly owned: Set<Module>;
  /** Set when prepareQatFx was called with `hybrid: true` (and its partitioner): the user's CPU lists. */
  readonly hybrid: { readonly dict: HybridDict } | null;
  /**
   * Per-node qconfigs set by qconfig setters (prepareQatFx's `qconfigSetter` form); they win over
   * the resolver's. Nodes without an entry (those created after the setters ran) use the resolver.
   */
  nodeQconfigs?: ReadonlyMap<Node, QConfig | null>;
  warn(message: string): void;
}

/** One step of prepareQatFx; a hybrid partition pass plugs in as another entry. */
export interface PreparePass {
  readonly name: string;
  run(ctx: PrepareContext): void;
}
