import { InvalidArgumentError } from '@qtk/tensor';
import { z } from 'zod';
import { StateDictError } from '../errors.js';
import { parseOptions, positiveInt } from '../options.js';
import type { BaseHyper, Optimizer } from './optimizer.js';

export interface SchedulerStateDict {
  version: 1;
  lastEpoch: number;
  baseLrs: number[];
  inner?: SchedulerStateDict;
}

/**
 * Base of the LR schedules: each is a closed form `lrAt(step)` of the group's initial LR, applied
 * to the optimizer on `step()`. Construction applies step 0 (as PyTorch's schedulers do).
 * Step per iteration or per epoch, as the schedule's parameters were chosen.
 */
export abstract class LRScheduler {
  readonly optimizer: Optimizer<BaseHyper>;
  readonly baseLrs: number[];
  /** Index of the last applied step (0 after construction). */
  lastEpoch = -1;
  private lastLrs: number[] = [];

  protected constructor(optimizer: Optimizer<BaseHyper>) {
    if (!optimizer || !Array.isArray(optimizer.paramGroups)) {
      throw new InvalidArgumentError(`${new.target.name}: expected an Optimizer`);
    }
    this.optimizer = optimizer;
    for (const g of optimizer.paramGroups) g.initialLr ??= g.lr;
    this.baseLrs = optimizer.paramGroups.map((g) => g.initialLr!);
  }

  /** The LR of group `group` (whose initial LR is `baseLr`) at `step`. */
  protected abstract lrFor(baseLr: number, step: number, group: number): number;

  /** Every group's LR at `step` (no side effects). */
  lrAt(step: number): number[] {
    return this.baseLrs.map((b, i) => this.lrFor(b, step, i));
  }

  /** Advances one step and writes the new LRs into the optimizer. */
  step(): void {
    this.lastEpoch++;
    this.apply();
  }

  /** The LRs applied by the last `step()` (or construction). */
  getLastLr(): number[] {
    return [...this.lastLrs];
  }

  protected apply(): void {
    this.lastLrs = this.lrAt(this.lastEpoch);
    this.optimizer.paramGroups.forEach((g, i) => {
      g.lr = this.lastLrs[i]!;
    });
  }

  stateDict(): SchedulerStateDict {
    return { version: 1, lastEpoch: this.lastEpoch, baseLrs: [...this.baseLrs] };
  }

  loadStateDict(sd: SchedulerStateDict): void {
    if (sd?.version !== 1 || sd.baseLrs?.length !== this.baseLrs.length) {
      throw new StateDictError({
        detail: `${this.constructor.name}: state dict is not a version-1 scheduler state for ${this.baseLrs.length} groups`,
      });
    }
    this.baseLrs.splice(0, this.baseLrs.length, ...sd.baseLrs);
    this.lastEpoch = sd.lastEpoch;
    this.apply();
  }
}

export interface StepLROptions {
  stepSize: number;
  gamma?: number;
}

/** lr = base · γ^⌊step / stepSize⌋. */
export class StepLR extends LRScheduler {
  readonly stepSize: number;
  readonly gamma: number;

  constructor(optimizer: Optimizer<BaseHyper>, options: StepLROptions) {
    super(optimizer);
    const o = parseOptions(
      'StepLR',
      z.object({ stepSize: positiveInt, gamma: z.number().positive().default(0.1) }).strict(),
      options,
    );
    this.stepSize = o.stepSize;
    this.gamma = o.gamma;
    this.step();
  }

  protected lrFor(base: number, step: number): number {
    return base * this.gamma ** Math.floor(step / this.stepSize);
  }
}

export interface CosineAnnealingLROptions {
  /** Steps of a half cosine period (the total number of steps when stepping per iteration). */
  tMax: number;
  etaMin?: number;
}

/** lr = ηmin + (base − ηmin)·(1 + cos(π·step / tMax)) / 2 (PyTorch's closed form). */
export class CosineAnnealingLR extends LRScheduler {
  readonly tMax: number;
  readonly etaMin: number;

  constructor(optimizer: Optimizer<BaseHyper>, options: CosineAnnealingLROptions) {
    super(optimizer);
    const o = parseOptions(
      'CosineAnnealingLR',
      z.object({ tMax: positiveInt, etaMin: z.number().nonnegative().default(0) }).strict(),
      options,
    );
    this.tMax = o.tMax;
    this.etaMin = o.etaMin;
    this.step();
  }

  protected lrFor(base: number, step: number): number {
    return this.etaMin + ((base - this.etaMin) * (1 + Math.cos((Math.PI * step) / this.tMax))) / 2;
  }
}

export interface LinearWarmupOptions {
  warmupSteps: number;
  /** Fraction of the base LR at step 0 (default 0); rises linearly to 1 at `warmupSteps`. */
  startFactor?: number;
  /** Schedule that takes over after warmup, evaluated at `step − warmupSteps` (default: constant). */
  after?: LRScheduler;
}

/**
 * Linear warmup wrapping another schedule: lr = base·(s + (1 − s)·step / warmupSteps) during
 * warmup, then `after.lrAt(step − warmupSteps)`. Step only the wrapper.
 */
export class LinearWarmup extends LRScheduler {
  readonly warmupSteps: number;
  readonly startFactor: number;
  readonly after: LRScheduler | null;

  constructor(optimizer: Optimizer<BaseHyper>, options: LinearWarmupOptions) {
    super(optimizer);
    const o = parseOptions(
      'LinearWarmup',
      z
        .object({
          warmupSteps: positiveInt,
          startFactor: z.number().min(0).max(1).default(0),
          after: z.custom<LRScheduler>((v) => v instanceof LRScheduler, 'expected an LRScheduler').optional(),
        })
        .strict(),
      options,
    );
    if (o.after && o.after.optimizer !== optimizer) {
      throw new InvalidArgumentError('LinearWarmup: the wrapped schedule must drive the same optimizer');
    }
    this.warmupSteps = o.warmupSteps;
    this.startFactor = o.startFactor;
    this.after = o.after ?? null;
    this.step();
  }

  protected lrFor(base: number, step: number, group: number): number {
    if (step < this.warmupSteps) return base * (this.startFactor + ((1 - this.startFactor) * step) / this.warmupSteps);
    return this.after ? this.after.lrAt(step - this.warmupSteps)[group]! : base;
  }

  protected override apply(): void {
    if (this.after) this.after.lastEpoch = Math.max(0, this.lastEpoch - this.warmupSteps);
    super.apply();
  }

  override stateDict(): SchedulerStateDict {
    return { ...super.stateDict(), ...(this.after ? { inner: this.after.stateDict() } : {}) };
  }
}
