import { RegistryError } from './errors.js';
import { closeNames } from './close-names.js';

export interface RegistryOptions<T> {
  /** Validates an entry before it is registered (throws on a broken contract). */
  check?: (entry: T) => void;
  /** The entry's registry key (default: its `name`). */
  keyOf?: (entry: T) => unknown;
  /**
   * Whether a new entry is the one already registered under its key (default: the same object).
   * Registries whose entries are records made per call (a kernel spec, a traceable function) compare
   * what the record stands for (its function).
   */
  same?: (registered: T, entry: T) => boolean;
  /** How to register, for a miss's message (default: 'register()'). */
  howToRegister?: string;
  /** What to do about a taken key, for the conflict's message (default: pick another name or unregister it). */
  conflictHint?: (key: string) => string;
  /** What to do about a miss with no close name, for the message (default: register it first with `howToRegister`). */
  missHint?: (key: string) => string;
  /** Whether lookups ignore case ('MSE' finds 'mse'); keys that differ only in case then conflict. */
  caseInsensitive?: boolean;
}

/**
 * A named set of plugins. Registering the same object twice is a no-op, another object under a
 * taken name throws, and a lookup miss throws naming every registered entry and the close ones.
 */
export class Registry<T extends object> {
  private readonly entries = new Map<string, T>();

  /** @param kind what the registry holds, for messages ('observer', 'march', ...) */
  constructor(
    readonly kind: string,
    private readonly options: RegistryOptions<T> = {},
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
    const taken = this.entries.get(this.resolve(key) ?? key);
    if (taken && (taken === entry || this.options.same?.(taken, entry))) return taken;
    if (taken) {
      throw new RegistryError(
        this.kind,
        key,
        `${this.kind} registry: another ${this.kind} is already registered as '${this.resolve(key)}'; ${this.options.conflictHint?.(key) ?? `pick another name, or unregister('${key}') first`}`,
      );
    }
    this.options.check?.(entry);
    this.entries.set(key, entry);
    return entry;
  }

  /** The registered key `name` stands for: itself, or with `caseInsensitive` the key equal to it ignoring case. */
  resolve(name: string): string | undefined {
    if (this.entries.has(name)) return name;
    if (!this.options.caseInsensitive) return undefined;
    const lower = name.toLowerCase();
    return this.names().find((k) => k.toLowerCase() === lower);
  }

  get(name: string): T {
    const key = this.resolve(name);
    if (key === undefined) throw this.missError(name);
    return this.entries.get(key)!;
  }

  /** The error `get(name)` throws for an unregistered name: the registered names, close ones and what to do. */
  missError(name: string): RegistryError {
    const known = this.names();
    const close = this.closeTo(name);
    const what = close.length
      ? `Did you mean ${close.map((c) => `'${c}'`).join(' or ')}?`
      : (this.options.missHint?.(name) ?? `Register it first with ${this.options.howToRegister ?? 'register()'}.`);
    return new RegistryError(
      this.kind,
      name,
      `no ${this.kind} named '${name}'; registered: ${known.length ? known.join(', ') : 'none'}. ${what}`,
      { suggestions: close },
    );
  }

  /** Registered names close to `name` (case, containment, a few edits), best first; none that share nothing. */
  closeTo(name: string, limit = 3): string[] {
    return closeNames(name, this.names(), limit).filter(
      (k) => k.toLowerCase() === name.toLowerCase() || name.length > 1,
    );
  }

  has(name: string): boolean {
    return this.resolve(name) !== undefined;
  }

  /** Removes an entry (for tests and hot reloading); returns whether it existed. */
  unregister(name: string): boolean {
    return this.entries.delete(this.resolve(name) ?? name);
  }

  /** Entries in registration order. */
  list(): T[] {
    return [...this.entries.values()];
  }

  names(): string[] {
    return [...this.entries.keys()];
  }
}
