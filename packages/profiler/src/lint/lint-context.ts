// The model as prepareQatFx will see it, for the linter's rules: traced, functional ops turned into
// named modules and fused for the march, input stubs inserted if asked, with the qconfig resolver
// and the hybridDict matcher prepare would use.
import {
  createPrepareContext,
  type HybridDict,
  insertInputQuantStubs,
  type PrepareContext,
  type QConfigDict,
  qconfigOf,
} from '@qtk/core';
import { defaultQatQconfig, type QConfig } from '@qtk/fake-quant';
import { fuseFx } from '@qtk/fusion';
import { HybridDictMatcher } from '@qtk/hybrid';
import type { GraphModule, Node } from '@qtk/ir';
import { DeQuantStub, type Module, QuantStub } from '@qtk/nn';
import { type MarchBackendV1, marches } from '@qtk/spec';
import { Tensor } from '@qtk/tensor';
import { tracedGraphOf } from '../values/traced.js';

export interface LintOptions {
  /** The target march (a registered id or a backend). */
  readonly march: string | MarchBackendV1;
  /** The qconfig dict you will pass to prepareQatFx; default `{ global: defaultQatQconfig }`. */
  readonly qconfigDict?: QConfigDict;
  /** The hybridDict you will pass to prepareQatFx (with `hybrid: true`). */
  readonly hybridDict?: HybridDict;
  /** prepareQatFx's `hybrid`: ops the march cannot run go to the CPU on their own. */
  readonly hybrid?: boolean;
  /** prepareQatFx's `inputQuantStubs`. */
  readonly inputQuantStubs?: boolean;
  /**
   * @deprecated No longer read: whether an op runs on the BPU is the march converter's own decision
   * (its supportsNode hook), so no trial conversion is needed to settle ops the table lacks.
   */
  readonly exampleInputs?: Tensor | readonly Tensor[];
}

export interface LintContext {
  readonly model: Module;
  readonly traced: GraphModule;
  /** The fused graph prepare starts from. */
  readonly gm: GraphModule;
  readonly march: MarchBackendV1;
  readonly qconfigDict: QConfigDict;
  readonly hybridDict: HybridDict;
  readonly hybrid: boolean;
  readonly inputQuantStubs: boolean;
  readonly exampleInputs: readonly Tensor[] | null;
  readonly prepare: PrepareContext;
  readonly hybridMatcher: HybridDictMatcher;
  qconfigOf(node: Node): { qconfig: QConfig | null; path: string };
  moduleAt(node: Node): Module | null;
}

export const DEFAULT_LINT_QCONFIG_DICT: QConfigDict = { global: defaultQatQconfig };

export function lintContext(model: Module, options: LintOptions, tool: string): LintContext {
  const traced = tracedGraphOf(model, tool);
  const march = typeof options.march === 'string' ? marches.get(options.march) : options.march;
  const gm = fuseFx(traced, { march });
  if (options.inputQuantStubs) insertInputQuantStubs(gm);
  const qconfigDict = options.qconfigDict ?? DEFAULT_LINT_QCONFIG_DICT;
  const hybridDict = options.hybridDict ?? {};
  const prepare = createPrepareContext({
    gm,
    input: model,
    source: traced,
    qconfigDict,
    march,
    hybrid: { dict: hybridDict },
    warn: () => {},
  });
  const moduleAt = (n: Node): Module | null => (n.op === 'call_module' ? gm.getSubmodule(n.target) : null);
  return {
    model,
    traced,
    gm,
    march,
    qconfigDict,
    hybridDict,
    hybrid: options.hybrid ?? false,
    inputQuantStubs: options.inputQuantStubs ?? false,
    exampleInputs:
      options.exampleInputs === undefined
        ? null
        : options.exampleInputs instanceof Tensor
          ? [options.exampleInputs]
          : [...options.exampleInputs],
    prepare,
    hybridMatcher: new HybridDictMatcher(prepare, hybridDict),
    qconfigOf: (n) => qconfigOf(prepare, n),
    moduleAt,
  };
}

export const isQuantStub = (ctx: LintContext, n: Node) => ctx.moduleAt(n) instanceof QuantStub;
export const isDeQuantStub = (ctx: LintContext, n: Node) => ctx.moduleAt(n) instanceof DeQuantStub;
/** Module path of a module call, else the node name. */
export const displayName = (n: Node) => (n.op === 'call_module' ? n.target : n.name);
