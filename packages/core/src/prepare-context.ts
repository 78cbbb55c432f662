import type { QConfig } from '@qtk/fake-quant';
import type { GraphModule, Node } from '@qtk/ir';
import type { Module } from '@qtk/nn';
import type { MarchBackendV1 } from '@qtk/spec';
import type { HybridDict } from './deploy-device.js';
import { type QConfigDict, QconfigResolver } from './qconfig-dict.js';

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
  /** prepareQatFx's `optimizeGraph`: the march's `optimizeGraphPasses` run after its `preparePasses`. */
  readonly optimizeGraph: boolean;
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

/** What a prepare context is made from: the graph being prepared, where it came from, and the user's choices. */
export interface PrepareContextInputs {
  /** The (fused) graph the passes edit. */
  readonly gm: GraphModule;
  /** The model given to prepareQatFx. */
  readonly input: Module;
  /** The traced model before fusion. */
  readonly source: GraphModule;
  readonly qconfigDict: QConfigDict;
  readonly march: MarchBackendV1;
  /** Hybrid mode's CPU lists; null outside hybrid mode. */
  readonly hybrid: { readonly dict: HybridDict } | null;
  /** Run the march's graph optimizations (default false). */
  readonly optimizeGraph?: boolean;
  readonly warn: (message: string) => void;
  /** Containers already cloned for `gm` (by prepare's own functional-op modules); default none. */
  readonly owned?: Set<Module>;
}

/**
 * The context prepareQatFx's passes run with, resolving qconfigs from `qconfigDict` on `gm`. Tools that
 * reason about a model as prepare will see it (the profiler's checks) build theirs here too.
 */
export function createPrepareContext(inputs: PrepareContextInputs): PrepareContext {
  const { gm, input, source, qconfigDict, march, hybrid, warn } = inputs;
  return {
    gm,
    input,
    source,
    resolver: new QconfigResolver(gm, qconfigDict),
    march,
    quantized: new Set(),
    owned: inputs.owned ?? new Set(),
    warn,
    hybrid,
    optimizeGraph: inputs.optimizeGraph ?? false,
  };
}
