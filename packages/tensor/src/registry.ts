import { KernelNotFoundError } from './errors.js';
import { Registry } from './named-registry.js';
import type { Tensor } from './tensor.js';

/** A compute backend. Higher priority wins; `isReady` lets a backend that loads asynchronously (wasm) opt in later. */
export interface Backend {
  name: string;
  priority: number;
  isReady?: () => boolean;
}

/** Scratch space a kernel fills for its gradient (indices, statistics, im2col buffers, ...). */
export type Saved = Record<string, unknown>;

// biome-ignore lint/suspicious/noExplicitAny: attributes differ per op; the registry and the tape erase their type
export type TensorKernel<A = any> = (inputs: Tensor[], attrs: A, saved: Saved) => Tensor | Tensor[];

export interface KernelSpec<F = TensorKernel> {
  op: string;
  backend: string;
  fn: F;
  /** Returns false when this kernel cannot handle these arguments, so dispatch falls back to the next backend. */
  // biome-ignore lint/suspicious/noExplicitAny: any[] parameters accept functions of every signature and still allow calling them (never[] would not)
  accepts?: (...args: any[]) => boolean;
}

const kernelKey = (op: string, backend: string) => `${op}@${backend}`;

/**
 * Backends by name and kernels by (op, backend), each in a Registry: registering the same backend
 * object, or the same function for an (op, backend), again is a no-op; another one throws.
 */
class KernelRegistry {
  private readonly backends = new Registry<Backend>('backend', {
    howToRegister: 'registerBackend(backend)',
    conflictHint: () => 'give the new backend another name',
  });
  private readonly kernels = new Registry<KernelSpec<unknown>>('kernel', {
    keyOf: (k) => (typeof k.op === 'string' && typeof k.backend === 'string' ? kernelKey(k.op, k.backend) : undefined),
    same: (a, b) => a.fn === b.fn,
    howToRegister: 'registerKernel({ op, backend, fn })',
    conflictHint: (key) =>
      `a backend has one kernel per op (key op@backend '${key}'); register the new one on another backend`,
  });
  private readonly cache = new Map<string, KernelSpec<unknown>[]>();
  private disabled = new Set<string>();

  registerBackend(backend: Backend): void {
    if (this.backends.register(backend) === backend) this.cache.clear();
  }

  registerKernel<F>(spec: KernelSpec<F>): void {
    if (this.kernels.register(spec) === spec) this.cache.delete(spec.op);
  }

  /** Kernels for an op, best backend first (ready, enabled backends only). */
  // biome-ignore lint/suspicious/noExplicitAny: attributes differ per op; the registry and the tape erase their type
  candidates(op: string): KernelSpec<any>[] {
    let list = this.cache.get(op);
    if (list) return list;
    list = this.kernels
      .list()
      .filter((spec) => spec.op === op && this.backends.has(spec.backend) && !this.disabled.has(spec.backend));
    list.sort((x, y) => this.backends.get(y.backend).priority - this.backends.get(x.backend).priority);
    this.cache.set(op, list);
    return list;
  }

  /** The kernel that will run for these arguments. */
  resolve<F>(op: string, ...args: unknown[]): KernelSpec<F> {
    for (const spec of this.candidates(op)) {
      const b = this.backends.get(spec.backend);
      if (b.isReady && !b.isReady()) continue;
      if (spec.accepts && !spec.accepts(...args)) continue;
      return spec as KernelSpec<F>;
    }
    throw new KernelNotFoundError(
      op,
      this.kernels
        .list()
        .filter((k) => k.op === op)
        .map((k) => k.backend),
    );
  }

  /** The kernel an op has on one named backend (for tests comparing backends). */
  kernelOn<F>(op: string, backend: string): KernelSpec<F> | undefined {
    const key = kernelKey(op, backend);
    return this.kernels.has(key) ? (this.kernels.get(key) as KernelSpec<F>) : undefined;
  }

  listBackends(): Backend[] {
    return this.backends.list().sort((a, b) => b.priority - a.priority);
  }

  listOps(backend?: string): string[] {
    const ops = this.kernels
      .list()
      .filter((k) => !backend || k.backend === backend)
      .map((k) => k.op);
    return [...new Set(ops)].sort();
  }

  /** Excludes a backend from dispatch (for example to compare against the cpu reference). */
  setBackendEnabled(name: string, enabled: boolean): void {
    this.backends.get(name); // an unknown backend throws, listing the registered ones
    if (enabled) this.disabled.delete(name);
    else this.disabled.add(name);
    this.cache.clear();
  }
}

/** The process-wide kernel registry. */
export const kernels = new KernelRegistry();
export type { KernelRegistry };

export function registerBackend(backend: Backend): void {
  kernels.registerBackend(backend);
}

export function registerKernel<F = TensorKernel>(spec: KernelSpec<F>): void {
  kernels.registerKernel(spec);
}
