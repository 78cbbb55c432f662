// One rewrite engine for many rule tables (fusion, legalisation, QDQ insertion): find
// non-overlapping matches, longest pattern first, and let each rule rewrite its match.
import type { Module } from '@qtk/nn';
import { InvalidArgumentError, Registry } from '@qtk/tensor';
import { PatternError } from './errors.js';
import type { Graph } from './graph.js';
import type { GraphModule } from './graph-module.js';
import type { Node } from './node.js';
import { matchPattern, patternSize, validatePattern, type Match, type Pattern } from './pattern.js';

export interface RewriteContext {
  readonly gm: GraphModule;
  readonly graph: Graph;
  /** The module a call_module node calls. */
  module(node: Node): Module;
}

export interface RewriteRule {
  /** Unique within its table. */
  readonly name: string;
  readonly pattern: Pattern;
  /** Extra condition on a match (module settings, shapes, ...); false leaves the nodes to other rules. */
  when?(match: Match, ctx: RewriteContext): boolean;
  /** Rewrites the graph (and modules) for the match; returning false declines it. */
  // biome-ignore lint/suspicious/noConfusingVoidType: a rule that rewrote nothing may simply end without a return
  apply(match: Match, ctx: RewriteContext): boolean | void;
}

export interface AppliedRewrite {
  readonly rule: string;
  /** Names of the matched nodes, root first (they may be erased by now). */
  readonly nodes: readonly string[];
}

function byLength(rules: readonly RewriteRule[]): RewriteRule[] {
  return rules
    .map((r, i) => ({ r, i, size: patternSize(r.pattern) }))
    .sort((a, b) => b.size - a.size || a.i - b.i)
    .map((x) => x.r);
}

/**
 * An ordered set of rules, tried longest pattern first (ties in registration order), in a Registry.
 * Registering the same rule object twice is a no-op; another rule under a taken name throws a
 * RegistryError.
 */
export class RuleTable {
  private readonly rules: Registry<RewriteRule>;

  constructor(
    readonly name: string,
    rules: Iterable<RewriteRule> = [],
  ) {
    this.rules = new Registry<RewriteRule>(`rule of RuleTable '${name}'`, {
      check: (rule) => validatePattern(rule.pattern, `rule '${rule.name}'`),
      howToRegister: `register({ name, pattern, apply })`,
      conflictHint: () => 'give the rule another name',
    });
    for (const r of rules) this.register(r);
  }

  register(rule: RewriteRule): this {
    if (!rule || typeof rule.name !== 'string' || typeof rule.apply !== 'function') {
      throw new InvalidArgumentError(`RuleTable '${this.name}': a rule needs a name, a pattern and apply()`);
    }
    this.rules.register(rule);
    return this;
  }

  /** The rule called `name`; a miss throws a RegistryError listing the table's rules. */
  get(name: string): RewriteRule {
    return this.rules.get(name);
  }

  /** The rules in registration order. */
  list(): RewriteRule[] {
    return this.rules.list();
  }

  /** The rules in matching order: longest pattern first. */
  ordered(): RewriteRule[] {
    return byLength(this.list());
  }
}

function contextFor(gm: GraphModule): RewriteContext {
  return { gm, graph: gm.graph, module: (node) => gm.getSubmodule(node.target) };
}

/**
 * Non-overlapping matches of the rules, found from the last node backwards (so a match is rooted
 * at its last op) with longer patterns tried first at each node.
 */
export function findMatches(
  gm: GraphModule,
  rules: RuleTable | readonly RewriteRule[],
): { rule: RewriteRule; match: Match }[] {
  const ordered = rules instanceof RuleTable ? rules.ordered() : byLength(rules);
  for (const r of ordered) validatePattern(r.pattern, `rule '${r.name}'`);
  const ctx = contextFor(gm);
  const claimed = new Set<Node>();
  const out: { rule: RewriteRule; match: Match }[] = [];
  const nodes = gm.graph.nodes;
  for (let i = nodes.length - 1; i >= 0; i--) {
    const node = nodes[i]!;
    if (claimed.has(node)) continue;
    for (const rule of ordered) {
      const m = matchPattern(node, rule.pattern, gm);
      if (!m || m.nodes.some((n) => claimed.has(n))) continue;
      if (rule.when && !rule.when(m, ctx)) continue;
      for (const n of m.nodes) claimed.add(n);
      out.push({ rule, match: m });
      break;
    }
  }
  return out;
}

export interface ApplyRulesOptions {
  /** Repeat passes until no rule applies (for rules whose output can match again). Default false: one pass. */
  fixpoint?: boolean;
  /** Passes before a fixpoint run gives up with a PatternError. Default 100. */
  maxPasses?: number;
  /** Erase nodes left without users after each pass. Default true. */
  eliminateDeadCode?: boolean;
}

/**
 * Applies a rule table to a GraphModule: each pass finds matches (findMatches) and calls each
 * rule's apply in graph order, skipping matches whose nodes an earlier rewrite erased. Returns
 * what was applied; the GraphModule recompiles on its next call.
 */
export function applyRules(
  gm: GraphModule,
  rules: RuleTable | readonly RewriteRule[],
  options: ApplyRulesOptions = {},
): AppliedRewrite[] {
  const maxPasses = options.maxPasses ?? 100;
  const applied: AppliedRewrite[] = [];
  for (let pass = 0; ; pass++) {
    if (pass >= maxPasses) {
      throw new PatternError(
        `applyRules: still rewriting after ${maxPasses} passes; the rules probably undo each other (last applied: ${applied
          .slice(-3)
          .map((a) => a.rule)
          .join(', ')})`,
      );
    }
    const ctx = contextFor(gm);
    const matches = findMatches(gm, rules).reverse();
    let count = 0;
    for (const { rule, match } of matches) {
      if (match.nodes.some((n) => n.erased)) continue;
      const names = match.nodes.map((n) => n.name);
      if (rule.apply(match, ctx) === false) continue;
      applied.push({ rule: rule.name, nodes: names });
      count++;
    }
    if (options.eliminateDeadCode ?? true) gm.graph.eliminateDeadCode();
    if (!options.fixpoint || count === 0) break;
  }
  return applied;
}
