/**
 * Optional per-op timing of kernels and gradients, for finding where a step spends its time.
 * Off by default (one boolean check per op); `profileOps(fn)` turns it on around `fn`.
 */
export interface OpTiming {
  op: string;
  phase: 'forward' | 'backward';
  calls: number;
  ms: number;
}

let active: Map<string, OpTiming> | null = null;

export function isProfiling(): boolean {
  return active !== null;
}

export function recordOp(op: string, phase: 'forward' | 'backward', ms: number): void {
  if (!active) return;
  const key = `${phase}:${op}`;
  let t = active.get(key);
  if (!t) {
    t = { op, phase, calls: 0, ms: 0 };
    active.set(key, t);
  }
  t.calls++;
  t.ms += ms;
}

/** Runs `fn` and returns its result with per-op timings, slowest first. */
export function profileOps<T>(fn: () => T): { result: T; timings: OpTiming[] } {
  const prev = active;
  active = new Map();
  try {
    const result = fn();
    return { result, timings: [...active.values()].sort((a, b) => b.ms - a.ms) };
  } finally {
    active = prev;
  }
}

/** A fixed-width table of timings. */
export function formatTimings(timings: readonly OpTiming[]): string {
  const total = timings.reduce((s, t) => s + t.ms, 0);
  const lines = timings.map(
    (t) =>
      `${t.phase.padEnd(8)} ${t.op.padEnd(24)} ${String(t.calls).padStart(6)} ${t.ms.toFixed(2).padStart(10)} ms ${((100 * t.ms) / total).toFixed(1).padStart(5)} %`,
  );
  return [
    `phase    op                        calls       time        share`,
    ...lines,
    `total ${total.toFixed(2)} ms`,
  ].join('\n');
}
