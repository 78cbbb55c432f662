// Which nodes a hybridDict sends to the CPU. A module name covers the module, everything inside it
// and the ops its forward makes (scope); a fused module is matched by any layer it absorbed. A
// module type likewise: the node's module, an absorbed layer, or any module containing them or
// whose forward made the op.
import { moduleNamesOf, moduleOf, type HybridDict, type PrepareContext } from '@qtk/core';
import { findSubmodule, type Node } from '@qtk/ir';
import type { Module } from '@qtk/nn';
import { closeNames } from '@qtk/tensor';
import { HybridDictError } from './errors.js';

// biome-ignore lint/complexity/noBannedTypes: a module class, whatever its constructor takes
type ModuleType = string | Function;

const typeName = (t: ModuleType) => (typeof t === 'string' ? t : t.name);
const isOf = (m: Module, t: ModuleType) =>
  typeof t === 'string' ? classNames(m).includes(t) : m instanceof (t as new (...a: never[]) => Module);

/** A module's class and base classes, nearest first (a subclass of Conv2d also counts as a Conv2d). */
function classNames(m: object): string[] {
  const names: string[] = [];
  for (let p = Object.getPrototypeOf(m); p !== null && p !== Object.prototype; p = Object.getPrototypeOf(p))
    names.push((p.constructor as { name: string }).name);
  return names;
}

const covers = (entry: string, path: string) => path === entry || path.startsWith(`${entry}.`);

/** A module path and its parents: 'a.b.c' → ['a.b.c', 'a.b', 'a']. */
function pathChain(path: string): string[] {
  const parts = path.split('.');
  return parts.map((_, i) => parts.slice(0, parts.length - i).join('.')).filter((p) => p !== '');
}

export interface HybridDictMatch {
  readonly key: 'moduleName' | 'moduleType';
  readonly entry: string;
}

export class HybridDictMatcher {
  private readonly names: readonly string[];
  private readonly types: readonly ModuleType[];
  constructor(
    private readonly ctx: PrepareContext,
    dict: HybridDict,
  ) {
    this.names = dict.moduleName ?? [];
    this.types = dict.moduleType ?? [];
  }

  /** The module paths a node stands for: its own (or its scope's) and those of the layers fused into it. */
  private pathsOf(node: Node): string[] {
    const own = node.op === 'call_module' ? node.target : node.scope;
    const fused = ((node.meta.fusedFrom as readonly string[] | undefined) ?? [])
      .map((name) => this.ctx.source.graph.node(name))
      .flatMap((src) => (src ? [src.op === 'call_module' ? src.target : src.scope] : []));
    return [own, ...fused].filter((p) => p !== '');
  }

  /** The modules whose type can match: the node's own, the fused layers', and every module around them. */
  private modulesOf(node: Node): Module[] {
    const found: Module[] = [];
    const own = moduleOf(this.ctx.gm, node);
    if (own) found.push(own);
    for (const path of this.pathsOf(node)) {
      for (const p of pathChain(path)) {
        const m = findSubmodule(this.ctx.source, p) ?? findSubmodule(this.ctx.gm, p);
        if (m) found.push(m);
      }
    }
    return found;
  }

  /** The entry that sends `node` to the CPU; moduleName entries are reported before moduleType ones. */
  match(node: Node): HybridDictMatch | null {
    const paths = this.pathsOf(node);
    const name = this.names.find((e) => paths.some((p) => covers(e, p)));
    if (name !== undefined) return { key: 'moduleName', entry: name };
    if (this.types.length === 0) return null;
    const modules = this.modulesOf(node);
    const type = this.types.find((t) => modules.some((m) => isOf(m, t)));
    return type !== undefined ? { key: 'moduleType', entry: typeName(type) } : null;
  }

  /** Throws HybridDictError for the first entry that matched no node, naming the closest names or types. */
  checkAllUsed(nodes: readonly Node[]): void {
    for (const entry of this.names) {
      if (nodes.some((n) => this.pathsOf(n).some((p) => covers(entry, p)))) continue;
      throw new HybridDictError('moduleName', entry, closeNames(entry, this.knownNames()));
    }
    for (const t of this.types) {
      if (nodes.some((n) => this.modulesOf(n).some((m) => isOf(m, t)))) continue;
      throw new HybridDictError('moduleType', typeName(t), closeNames(typeName(t), this.knownTypes()));
    }
  }

  private knownNames(): string[] {
    return moduleNamesOf([this.ctx.source, this.ctx.gm]);
  }

  private knownTypes(): string[] {
    const types = new Set<string>();
    for (const gm of [this.ctx.source, this.ctx.gm])
      for (const [, m] of gm.namedModules()) types.add(m.constructor.name);
    return [...types];
  }
}
