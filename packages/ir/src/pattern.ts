// Patterns over graph nodes, after torch.ao's fusion patterns: `[ReLU, [add, [BatchNorm2d, Conv2d], MatchAll]]`
// reads "a ReLU whose input is an add whose first input is a BatchNorm2d of a Conv2d, second anything".
import { Module } from '@qtk/nn';
import { traceables } from '@qtk/tensor';
import { PatternError } from './errors.js';
import type { ModuleClass } from './leaf-modules.js';
import { Node, type Argument } from './node.js';
import { findSubmodule } from './find-submodule.js';

/** Matches any argument (a node of any kind, or a constant); FX's MatchAllNode. */
export const MatchAll: unique symbol = Symbol('MatchAll');

/** Matches when any of its elements does. */
export class AnyOf {
  constructor(readonly elements: readonly PatternElement[]) {}
}

/** Matches call_module nodes whose module is an instance of `cls` or of a subclass (plain classes match the exact class). */
export class SubclassOf {
  constructor(readonly cls: ModuleClass) {}
}

export function anyOf(...elements: PatternElement[]): AnyOf {
  return new AnyOf(elements);
}

export function subclassOf(cls: ModuleClass): SubclassOf {
  return new SubclassOf(cls);
}

/**
 * One position of a pattern:
 * - a Module class: a call_module node (forward) whose module's class is exactly that class;
 * - a registered function (`relu`, `add`, `F.conv2d`, an fxWrap-ed function): a call_function node of it;
 * - a module method such as `FloatFunctional.prototype.add`: a call_module node calling that method;
 * - a string: a call_method node of that name (`x.add(y)` is `'add'`);
 * - `MatchAll`, `anyOf(...)`, `subclassOf(Class)`.
 */
export type PatternElement =
  | ModuleClass
  // biome-ignore lint/suspicious/noExplicitAny: any[] parameters accept functions of every signature and still allow calling them (never[] would not)
  | ((...args: any[]) => unknown)
  | string
  | typeof MatchAll
  | AnyOf
  | SubclassOf;

/** An element, or `[element, ...patterns of its args]` (args matched positionally, all of them). */
export type Pattern = PatternElement | readonly [PatternElement, ...Pattern[]];

export interface Match {
  readonly pattern: Pattern;
  /** The node matched by the pattern's first element (the last op, e.g. the ReLU). */
  readonly root: Node;
  /** Matched nodes in pattern order (root first), MatchAll positions excluded, each once. */
  readonly nodes: readonly Node[];
  /** Current values at the MatchAll positions, in pattern order (read live from the owning nodes' args). */
  readonly captures: readonly Argument[];
}

function isModuleClass(v: unknown): v is ModuleClass {
  return typeof v === 'function' && (v as { prototype?: unknown }).prototype instanceof Module;
}

/** Number of non-MatchAll elements; rule tables try longer patterns first. */
export function patternSize(p: Pattern): number {
  if (Array.isArray(p)) return p.reduce((s: number, q: Pattern) => s + patternSize(q), 0);
  return p === MatchAll ? 0 : 1;
}

/** Throws a PatternError for malformed patterns (empty arrays, unknown element kinds). */
export function validatePattern(p: Pattern, where = 'pattern'): void {
  if (Array.isArray(p)) {
    if (p.length === 0) throw new PatternError(`${where}: empty array`);
    if (Array.isArray(p[0])) throw new PatternError(`${where}: the first element must be an op, not a nested pattern`);
    p.forEach((q: Pattern, i: number) => {
      validatePattern(q, `${where}[${i}]`);
    });
    return;
  }
  const ok =
    p === MatchAll || typeof p === 'string' || typeof p === 'function' || p instanceof AnyOf || p instanceof SubclassOf;
  if (!ok)
    throw new PatternError(
      `${where}: expected a module class, a function, a method name, MatchAll, anyOf or subclassOf; got ${String(p)}`,
    );
  if (p instanceof AnyOf)
    p.elements.forEach((e, i) => {
      validatePattern(e, `${where}.anyOf[${i}]`);
    });
}

function moduleOf(node: Node, root: Module): Module | undefined {
  return findSubmodule(root, node.target) ?? undefined;
}

/** Whether one pattern element matches `node` (MatchAll excluded; it matches at argument level). */
export function elementMatches(el: PatternElement, node: Node, root: Module): boolean {
  if (el instanceof AnyOf) return el.elements.some((e) => e !== MatchAll && elementMatches(e, node, root));
  if (el instanceof SubclassOf) {
    if (node.op !== 'call_module' || node.method !== undefined) return false;
    return moduleOf(node, root) instanceof el.cls;
  }
  if (typeof el === 'string') return node.op === 'call_method' && node.target === el;
  if (isModuleClass(el)) {
    if (node.op !== 'call_module' || node.method !== undefined) return false;
    return moduleOf(node, root)?.constructor === el;
  }
  if (typeof el === 'function') {
    const entry = traceables.lookup(el);
    if (entry) return node.op === 'call_function' && node.target === entry.name;
    if (node.op !== 'call_module' || node.method === undefined) return false;
    const m = moduleOf(node, root) as unknown as Record<string, unknown> | undefined;
    return m !== undefined && m[node.method] === el;
  }
  return false;
}

/**
 * Matches `pattern` at `node`. Nodes inside the pattern (all but the root) must have exactly one
 * user, as in torch.ao's matcher, so replacing the match cannot break other readers.
 */
export function matchPattern(node: Node, pattern: Pattern, root: Module): Match | null {
  const nodes: Node[] = [];
  const capturePlaces: { owner: Node; index: number }[] = [];
  const go = (n: Node, p: Pattern, isRoot: boolean): boolean => {
    const [self, ...argPatterns] = (Array.isArray(p) ? p : [p]) as [PatternElement, ...Pattern[]];
    if (!isRoot && n.numUsers > 1) return false;
    if (!elementMatches(self, n, root)) return false;
    nodes.push(n);
    if (argPatterns.length === 0) return true;
    if (n.args.length !== argPatterns.length) return false;
    for (let i = 0; i < argPatterns.length; i++) {
      const ap = argPatterns[i]!;
      const a = n.args[i];
      if (ap === MatchAll) {
        capturePlaces.push({ owner: n, index: i });
        continue;
      }
      if (!(a instanceof Node) || !go(a, ap, false)) return false;
    }
    return true;
  };
  if (pattern === MatchAll || !go(node, pattern, true)) return null;
  return {
    pattern,
    root: node,
    nodes: [...new Set(nodes)],
    get captures() {
      return capturePlaces.map((c) => c.owner.args[c.index]);
    },
  };
}
