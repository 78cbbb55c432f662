import { RegistryError } from './errors.js';

/**
 * A named set of plugins. Registering the same object twice is a no-op, another object under a
 * taken name throws, and a lookup miss throws naming every registered entry.
 */
export class Registry<T extends object> {
  private readonly entries = new Map<string, T>();

  /**
   * @param kind what the registry holds, for messages ('observer', 'march', ...)
   * @param options.check validates an entry before it is registered (throws on a broken contract)
   * @param options.keyOf the entry's registry key (default: its `name`)
   */
  constructor(
    readonly kind: string,
    private readonly options: { check?: (entry: T) => void; keyOf?: (entry: T) => unknown } = {},
  ) {}

  private keyOf(entry: T): unknown {
    return this.options.keyOf ? this.options.keyOf(entry) : (entry as { name?: unknown }).name;
  }

  register(entry: T): T {
    const key =
      entry !== null && (typeof entry === 'object' || typeof entry === 'function') ? this.keyOf(entry) : undefined;
    if (typeof key !== 'string' || key === '') {
      throw new RegistryError(
        this.kind,
        String(key),
        `${this.kind} registry: an entry needs a non-empty string ${this.options.keyOf ? 'key' : 'name'}`,
      );
    }
    const taken = this.entries.get(key);
    if (taken === entry) return entry;
    if (taken) {
      throw new RegistryError(
        this.kind,
        key,
        `${this.kind} registry: another ${this.kind} is already registered as '${key}'; pick another name, or unregister('${key}') first`,
      );
    }
    this.options.check?.(entry);
    this.entries.set(key, entry);
    return entry;
  }

  get(name: string): T {
    const e = this.entries.get(name);
    if (!e) {
      const known = this.names();
      throw new RegistryError(
        this.kind,
        name,
        `no ${this.kind} named '${name}'; registered: ${known.length ? known.join(', ') : 'none'}. Register it first with register().`,
      );
    }
    return e;
  }

  has(name: string): boolean {
    return this.entries.has(name);
  }

  /** Removes an entry (for tests and hot reloading); returns whether it existed. */
  unregister(name: string): boolean {
    return this.entries.delete(name);
  }

  /** Entries in registration order. */
  list(): T[] {
    return [...this.entries.values()];
  }

  names(): string[] {
    return [...this.entries.keys()];
  }
}
