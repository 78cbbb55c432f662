// fuseFx: applies a fusion table (FusionPatternV1 entries) to a copy of a GraphModule. Each fused
// module takes the place of its match's root (the last op); modules it absorbed become Identity.
import {
  applyRules,
  GraphModule,
  IMPORTED_NAMES,
  importedNamesOf,
  type Node,
  RuleTable,
  sanitizeName,
  symbolicTrace,
  type AppliedRewrite,
  type Match,
  type RewriteContext,
  type RewriteRule,
  type TraceOptions,
} from '@qtk/ir';
import { Identity, Module } from '@qtk/nn';
import { fusionPatterns, resolveMarchOption, type FusionPatternV1, type MarchBackendV1 } from '@qtk/spec';
import { InvalidArgumentError } from '@qtk/tensor';
import { FusedConvBase, registerFusedModules } from './fused-modules.js';
import { registerFusedOps } from './fused-ops.js';
import { defaultFusionPatterns, referencedElsewhere } from './fusion-patterns.js';
import { moduleizeFunctionalOps } from './functional-modules.js';
import { forMarch } from './march-fusions.js';
import { setModuleCopyOnWrite } from './module-tree.js';

/** Modules created for (or cloned into) a fused GraphModule, which edits may change in place. */
const ownedModules = new WeakMap<GraphModule, Set<Module>>();

function owned(gm: GraphModule): Set<Module> {
  let s = ownedModules.get(gm);
  if (!s) {
    s = new Set();
    ownedModules.set(gm, s);
  }
  return s;
}

/** Generated-name kind for a root that cannot give its own name to the fused module. */
function kindOf(root: Node, ctx: RewriteContext): string {
  if (root.op === 'call_module' && !root.method) return sanitizeName(ctx.module(root).constructor.name.toLowerCase());
  if (root.op === 'call_module' && root.method) return sanitizeName(root.method);
  return sanitizeName(root.target);
}

/**
 * Rewrites one match: the fused module (`entry.createFused`) is called by a new node in the root's
 * place with the inputs of the match's first op (its last node) followed by the MatchAll captures.
 * It is stored at the module path of the match's add when that add is a FloatFunctional call nothing
 * else uses (`block.skip`, or `_generated_add_0` for a functional add that fuseFx turned into one),
 * else at the root's path when the root is a call_module nothing else uses, else as
 * `_generated_<op>_<k>`. Other matched modules that nothing else uses become Identity. Returns the fused node.
 */
export function applyFusion(entry: FusionPatternV1, match: Match, ctx: RewriteContext): Node {
  const { gm, graph } = ctx;
  const fused = entry.createFused(match, ctx);
  const root = match.root;
  const first = match.nodes[match.nodes.length - 1]!;
  const args = [...first.args, ...match.captures];
  const mine = owned(gm);
  // an add that is a module call (a FloatFunctional, or a generated one for a functional add) gives
  // the fused module its name, as documented for horizon_plugin_pytorch; else the last op does
  const addCall = match.nodes.find(
    (n) => n.op === 'call_module' && n.method === 'add' && !referencedElsewhere(ctx, n, match.nodes),
  );
  let path: string;
  if (addCall) {
    path = addCall.target;
    setModuleCopyOnWrite(gm, path, fused, mine);
  } else if (root.op === 'call_module' && !referencedElsewhere(ctx, root, match.nodes)) {
    path = root.target;
    setModuleCopyOnWrite(gm, path, fused, mine);
  } else {
    path = gm.addGeneratedSubmodule(kindOf(root, ctx), fused);
  }
  mine.add(fused);
  for (const n of match.nodes) {
    if (n.op !== 'call_module' || n.target === path) continue;
    if (!referencedElsewhere(ctx, n, match.nodes)) setModuleCopyOnWrite(gm, n.target, new Identity(), mine);
  }
  const node = graph.insertingBefore(root, () => graph.callModule(path, args, {}, { scope: root.scope }));
  node.meta = { ...root.meta, fusedFrom: match.nodes.map((n) => n.name), fusionPattern: entry.name };
  // the file's names of every part, first op first, so the fused node shows its conv's name
  const imported = [...match.nodes].reverse().flatMap((n) => importedNamesOf(n));
  if (imported.length) node.meta[IMPORTED_NAMES] = imported;
  root.replaceAllUsesWith(node);
  for (const n of match.nodes) graph.eraseNode(n);
  const want = sanitizeName(path);
  if (node.name !== want && !graph.node(want)) node.name = want;
  return node;
}

/** A rewrite rule (for @qtk/ir's engine) that applies a fusion pattern with applyFusion. */
export function fusionRule(entry: FusionPatternV1): RewriteRule {
  return {
    name: entry.name,
    pattern: entry.pattern,
    when: entry.when ? (m, c) => entry.when!(m, c) : undefined,
    apply: (m, c) => {
      applyFusion(entry, m, c);
    },
  };
}

/** A RuleTable of fusion patterns (matched longest first, ties in table order). */
export function fusionRuleTable(
  patterns: Iterable<FusionPatternV1> = defaultFusionPatterns,
  name = 'fusion',
): RuleTable {
  return new RuleTable(name, [...patterns].map(fusionRule));
}

let defaultsRegistered = false;

/** Registers the built-in patterns in @qtk/spec's `fusionPatterns` registry and the fused classes as trace leaves (idempotent). */
export function registerDefaultFusions(): void {
  if (defaultsRegistered) return;
  registerFusedModules();
  registerFusedOps();
  for (const p of defaultFusionPatterns) fusionPatterns.register(p);
  defaultsRegistered = true;
}

export interface FuseFxOptions {
  /**
   * The target march (a registered id or a backend): only the fusions its capability table can run
   * are applied (the base op in the table, the fused Add / Relu / Clip (ReLU6) in its `fusable`; BatchNorm
   * absorption always). Default: the march chosen with setMarch; with none, every pattern applies.
   */
  march?: string | MarchBackendV1;
  /** The patterns to apply; default every pattern in @qtk/spec's `fusionPatterns` registry (the built-in table plus any registered). */
  patterns?: Iterable<FusionPatternV1>;
  /** Options for tracing when a plain Module is given. */
  trace?: TraceOptions;
  /** Receives what was fused (pattern name and the matched node names, root first). */
  onFused?: (applied: readonly AppliedRewrite[]) => void;
  /**
   * Turn functional add/sub/mul/div/cat/matmul into generated FloatFunctional modules first
   * (`_generated_add_0`, ...; see moduleizeFunctionalOps). Default true.
   */
  moduleizeFunctions?: boolean;
}

/**
 * Fuses a model: Conv2d / ConvTranspose2d / Conv3d / Linear followed by BatchNorm, add and
 * ReLU / ReLU6 (see the fusion table) become one fused module each (ConvAddReLU2d, ...), as far
 * as the march's capability table allows (`options.march`, else setMarch's).
 *
 * Functional add/sub/mul/div/cat/matmul calls first become generated FloatFunctional modules
 * (`_generated_add_0`, ...), so each has a name; a fused conv + add sits at its add's name.
 *
 * Accepts a Module (traced with symbolicTrace) or a GraphModule, and returns a NEW GraphModule;
 * the input and its modules are not modified. Sharing, precisely:
 * - every module no fusion touches is the same instance as in the input, so its parameters and
 *   buffers are shared (training one trains the other);
 * - a fused module without a BatchNorm holds the input's conv/linear instance itself (shared weight and bias);
 * - a fused module with a BatchNorm holds a copy of the conv/linear (same settings) whose weight and
 *   bias are new Parameters: the BN absorbed in eval semantics, from its running statistics;
 * - traced-through containers on the path to a replaced module are shallow copies (new objects,
 *   same children otherwise); the root's own parameters, buffers and constants are shared.
 *
 * BN absorption uses running statistics whatever the mode, so the fused model equals the unfused
 * one in eval mode (to float rounding). In training mode the unfused BN would normalise with batch
 * statistics and update its running stats; the fused model does neither. Fuse for evaluation,
 * calibration and QAT with BN folded; keep BN unfused (do not fuse) to train with batch statistics.
 */
export function fuseFx(model: Module, options: FuseFxOptions = {}): GraphModule {
  if (!(model instanceof Module))
    throw new InvalidArgumentError(
      `fuseFx: expected a Module or GraphModule, got ${model === null ? 'null' : typeof model}`,
    );
  registerDefaultFusions();
  const source = model instanceof GraphModule ? model : symbolicTrace(model, options.trace);
  const gm = new GraphModule(source, source.graph.clone().graph, { className: source.className });
  if (options.moduleizeFunctions !== false) moduleizeFunctionalOps(gm, owned(gm));
  // applyFusion erases what it replaces; other nodes (even dead ones) are left as they were
  const march = resolveMarchOption(options.march);
  const patterns = [...(options.patterns ?? fusionPatterns.list())];
  const applied = applyRules(gm, fusionRuleTable(march ? patterns.map((p) => forMarch(p, march)) : patterns), {
    eliminateDeadCode: false,
  });
  gm.recompile();
  options.onFused?.(applied);
  return gm;
}

/** Whether `module` is one of the built-in fused modules. */
export function isFusedModule(module: unknown): module is FusedConvBase {
  return module instanceof FusedConvBase;
}
