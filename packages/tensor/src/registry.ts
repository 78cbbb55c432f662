import { KernelNotFoundError, QtkError } from './errors.js';
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

class KernelRegistry {
  private readonly backends = new Map<string, Backend>();
  // biome-ignore lint/suspicious/noExplicitAny: attributes differ per op; the registry and the tape erase their type
  private readonly kernels = new Map<string, Map<string, KernelSpec<any>>>();
  // biome-ignore lint/suspicious/noExplicitAny: attributes differ per op; the registry and the tape erase their type
  private readonly cache = new Map<string, KernelSpec<any>[]>();
  private disabled = new Set<string>();

  registerBackend(backend: Backend): void {
    const existing = this.backends.get(backend.name);
    if (existing === backend) return;
    if (existing)
      throw new QtkError('E_REGISTRY', `backend '${backend.name}' is already registered with another object`);
    this.backends.set(backend.name, backend);
    this.cache.clear();
  }

  registerKernel<F>(spec: KernelSpec<F>): void {
    let byBackend = this.kernels.get(spec.op);
    if (!byBackend) {
      byBackend = new Map();
      this.kernels.set(spec.op, byBackend);
    }
    const existing = byBackend.get(spec.backend);
    if (existing && existing.fn === spec.fn) return;
    if (existing) {
      throw new QtkError(
        'E_REGISTRY',
        `a kernel for op '${spec.op}' on backend '${spec.backend}' is already registered`,
      );
    }
    byBackend.set(spec.backend, spec);
    this.cache.delete(spec.op);
  }

  /** Kernels for an op, best backend first (ready, enabled backends only). */
  // biome-ignore lint/suspicious/noExplicitAny: attributes differ per op; the registry and the tape erase their type
  candidates(op: string): KernelSpec<any>[] {
    let list = this.cache.get(op);
    if (list) return list;
    const byBackend = this.kernels.get(op);
    list = [];
    if (byBackend) {
      for (const spec of byBackend.values()) {
        const b = this.backends.get(spec.backend);
        if (!b || this.disabled.has(b.name)) continue;
        list.push(spec);
      }
      list.sort((x, y) => this.backends.get(y.backend)!.priority - this.backends.get(x.backend)!.priority);
    }
    this.cache.set(op, list);
    return list;
  }

  /** The kernel that will run for these arguments. */
  resolve<F>(op: string, ...args: unknown[]): KernelSpec<F> {
    for (const spec of this.candidates(op)) {
      const b = this.backends.get(spec.backend)!;
      if (b.isReady && !b.isReady()) continue;
      if (spec.accepts && !spec.accepts(...args)) continue;
      return spec as KernelSpec<F>;
    }
    throw new KernelNotFoundError(op, [...(this.kernels.get(op)?.keys() ?? [])]);
  }

  /** The kernel an op has on one named backend (for tests comparing backends). */
  kernelOn<F>(op: string, backend: string): KernelSpec<F> | undefined {
    return this.kernels.get(op)?.get(backend) as KernelSpec<F> | undefined;
  }

  listBackends(): Backend[] {
    return [...this.backends.values()].sort((a, b) => b.priority - a.priority);
  }

  listOps(backend?: string): string[] {
    return [...this.kernels.entries()]
      .filter(([, m]) => !backend || m.has(backend))
      .map(([op]) => op)
      .sort();
  }

  /** Excludes a backend from dispatch (for example to compare against the cpu reference). */
  setBackendEnabled(name: string, enabled: boolean): void {
    if (!this.backends.has(name)) {
      throw new QtkError(
        'E_REGISTRY',
        `unknown backend '${name}'; registered: ${[...this.backends.keys()].join(', ')}`,
      );
    }
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
