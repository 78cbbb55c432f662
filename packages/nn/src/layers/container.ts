import { InvalidArgumentError, type Tensor } from '@qtk/tensor';
import { Module } from '../module.js';

function requireModule(owner: string, m: unknown, where: string): Module {
  if (!(m instanceof Module))
    throw new InvalidArgumentError(`${owner}: ${where} must be a Module, got ${m === null ? 'null' : typeof m}`);
  return m;
}

/** Shared storage of the containers: children live in an ordered map, not in fields. */
abstract class Container extends Module {
  protected readonly items = new Map<string, Module>();

  override namedChildren(): [string, Module][] {
    return [...this.items, ...super.namedChildren()];
  }

  override getChild(name: string): Module | undefined {
    return this.items.get(name) ?? super.getChild(name);
  }

  override setChild(name: string, module: Module | null): void {
    if (this.items.has(name) || !super.getChild(name)) {
      if (module === null) this.items.delete(name);
      else this.items.set(name, requireModule(this.constructor.name, module, `child '${name}'`));
      return;
    }
    super.setChild(name, module);
  }

  get length(): number {
    return this.items.size;
  }
}

/** Modules indexed 0..n-1 (names '0', '1', ...); renumbered on insert. */
abstract class IndexedContainer extends Container {
  constructor(modules: Iterable<Module>) {
    super();
    for (const m of modules) this.append(m);
  }

  append(module: Module): this {
    this.items.set(String(this.items.size), requireModule(this.constructor.name, module, `item ${this.items.size}`));
    return this;
  }

  extend(modules: Iterable<Module>): this {
    for (const m of modules) this.append(m);
    return this;
  }

  insert(index: number, module: Module): this {
    const list = [...this.items.values()];
    const i = index < 0 ? index + list.length : index;
    if (!Number.isInteger(i) || i < 0 || i > list.length) {
      throw new InvalidArgumentError(
        `${this.constructor.name}.insert: index ${index} out of range for length ${list.length}`,
      );
    }
    list.splice(i, 0, requireModule(this.constructor.name, module, 'inserted item'));
    this.renumber(list);
    return this;
  }

  /** The module at `index` (negative counts from the end). */
  at(index: number): Module {
    const n = this.items.size;
    const i = index < 0 ? index + n : index;
    const m = this.items.get(String(i));
    if (!m) throw new InvalidArgumentError(`${this.constructor.name}: index ${index} out of range for length ${n}`);
    return m;
  }

  /** Removes the module at `index` and renumbers the rest. */
  removeAt(index: number): Module {
    const m = this.at(index);
    const list = [...this.items.values()];
    list.splice(index < 0 ? index + list.length : index, 1);
    this.renumber(list);
    return m;
  }

  [Symbol.iterator](): Iterator<Module> {
    return this.items.values();
  }

  private renumber(list: Module[]): void {
    this.items.clear();
    list.forEach((m, i) => {
      this.items.set(String(i), m);
    });
  }
}

/** Runs its children in order, each on the previous one's output. */
export class Sequential extends IndexedContainer {
  constructor(...modules: Module[]) {
    super(modules);
  }

  forward(input: Tensor): Tensor {
    let x: unknown = input;
    for (const m of this.items.values()) x = m.call(x);
    return x as Tensor;
  }
}

/** A list of modules registered as children; call them yourself. */
export class ModuleList extends IndexedContainer {
  constructor(modules: Iterable<Module> = []) {
    super(modules);
  }

  forward(): never {
    throw new InvalidArgumentError('ModuleList has no forward; iterate over it and call the modules');
  }
}

/** Modules by name (insertion order), registered as children. */
export class ModuleDict extends Container {
  constructor(modules: Record<string, Module> | Iterable<[string, Module]> = {}) {
    super();
    const entries = Symbol.iterator in modules ? [...(modules as Iterable<[string, Module]>)] : Object.entries(modules);
    for (const [k, m] of entries) this.set(k, m);
  }

  get(key: string): Module | undefined {
    return this.items.get(key);
  }

  set(key: string, module: Module): this {
    if (typeof key !== 'string' || key === '' || key.includes('.')) {
      throw new InvalidArgumentError(`ModuleDict: key must be a non-empty string without '.', got '${String(key)}'`);
    }
    this.items.set(key, requireModule('ModuleDict', module, `value for '${key}'`));
    return this;
  }

  has(key: string): boolean {
    return this.items.has(key);
  }

  delete(key: string): boolean {
    return this.items.delete(key);
  }

  keys(): string[] {
    return [...this.items.keys()];
  }

  values(): Module[] {
    return [...this.items.values()];
  }

  entries(): [string, Module][] {
    return [...this.items];
  }

  [Symbol.iterator](): Iterator<[string, Module]> {
    return this.items.entries();
  }

  forward(): never {
    throw new InvalidArgumentError('ModuleDict has no forward; look modules up by key and call them');
  }
}
