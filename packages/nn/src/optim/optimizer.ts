import { InvalidArgumentError, Tensor } from '@qtk/tensor';
import type { z } from 'zod';
import { StateDictError } from '../errors.js';
import { parseOptions } from '../options.js';
import { STATE_DICT_VERSION, type StateDict } from '../state-dict.js';

/** Hyperparameters every optimizer has. */
export interface BaseHyper {
  lr: number;
}

/** A set of parameters sharing hyperparameters. `initialLr` is recorded by the first LR scheduler. */
export type ParamGroup<H extends BaseHyper> = H & { params: Tensor[]; initialLr?: number };

export type ParamGroupInput<H extends BaseHyper> = { params: Iterable<Tensor> } & Partial<H>;

/** Per-parameter optimizer state: moment buffers and counters. */
export type ParamState = Record<string, Float32Array | number>;

export interface OptimizerStateDict {
  version: typeof STATE_DICT_VERSION;
  /** By parameter index (counted across groups in order); buffers as tensors. */
  state: Record<number, Record<string, Tensor | number>>;
  paramGroups: (Record<string, unknown> & { params: number[] })[];
}

/**
 * Base of the optimizers, after torch.optim.Optimizer: parameter groups with their own
 * hyperparameters, per-parameter state, `zeroGrad`, `stateDict` / `loadStateDict`.
 * Subclasses implement `updateGroup` with typed-array loops writing parameters in place.
 */
export abstract class Optimizer<H extends BaseHyper> {
  readonly defaults: H;
  readonly paramGroups: ParamGroup<H>[] = [];
  readonly state = new Map<Tensor, ParamState>();
  private readonly name: string;
  private readonly hyperSchema: z.ZodType<H, z.ZodTypeDef, unknown>;

  protected constructor(
    name: string,
    params: Iterable<Tensor> | ParamGroupInput<H>[],
    defaults: unknown,
    schema: z.ZodType<H, z.ZodTypeDef, unknown>,
  ) {
    this.name = name;
    this.hyperSchema = schema;
    this.defaults = parseOptions(name, schema, defaults);
    const list = [...(params as Iterable<Tensor | ParamGroupInput<H>>)];
    if (list.length === 0) throw new InvalidArgumentError(`${name}: got an empty parameter list`);
    if (list.every((p) => p instanceof Tensor))
      this.addParamGroup({ params: list as Tensor[] } as unknown as ParamGroupInput<H>);
    else for (const g of list as ParamGroupInput<H>[]) this.addParamGroup(g);
  }

  /** Adds a group; hyperparameters it does not set come from the defaults. */
  addParamGroup(group: ParamGroupInput<H>): void {
    if (!group || typeof group !== 'object' || !('params' in group)) {
      throw new InvalidArgumentError(`${this.name}: a parameter group must be an object with a 'params' list`);
    }
    const { params, ...hyper } = group;
    const merged = parseOptions(`${this.name} param group ${this.paramGroups.length}`, this.hyperSchema, {
      ...this.defaults,
      ...hyper,
    });
    const ps = [...params];
    const seen = new Set(this.paramGroups.flatMap((g) => g.params));
    ps.forEach((p, i) => {
      if (!(p instanceof Tensor)) throw new InvalidArgumentError(`${this.name}: params[${i}] is not a Tensor`);
      if (p.dtype !== 'float32' || !p.isContiguous()) {
        throw new InvalidArgumentError(
          `${this.name}: params[${i}] must be a contiguous float32 tensor, got ${p.dtype} [${p.shape.join(', ')}]`,
        );
      }
      if (p.gradFn)
        throw new InvalidArgumentError(
          `${this.name}: params[${i}] is not a leaf tensor (it was computed by an op); optimize leaves only`,
        );
      if (seen.has(p))
        throw new InvalidArgumentError(`${this.name}: params[${i}] appears in more than one parameter group`);
      seen.add(p);
    });
    this.paramGroups.push({ ...merged, params: ps });
  }

  /** Drops every parameter's gradient (sets it to null). */
  zeroGrad(): void {
    for (const g of this.paramGroups) for (const p of g.params) p.grad = null;
  }

  /** One update of every parameter that has a gradient. `closure` re-evaluates the loss if given. */
  step(closure?: () => number): number | undefined {
    const loss = closure?.();
    for (const group of this.paramGroups) this.updateGroup(group);
    return loss;
  }

  protected abstract updateGroup(group: ParamGroup<H>): void;

  /** Per-parameter state, created on first use. */
  protected stateOf(p: Tensor): ParamState {
    let s = this.state.get(p);
    if (!s) {
      s = {};
      this.state.set(p, s);
    }
    return s;
  }

  stateDict(): OptimizerStateDict {
    const state: OptimizerStateDict['state'] = {};
    const paramGroups: OptimizerStateDict['paramGroups'] = [];
    let index = 0;
    for (const g of this.paramGroups) {
      const { params, initialLr, ...hyper } = g;
      const ids: number[] = [];
      for (const p of params) {
        const s = this.state.get(p);
        if (s) {
          const entry: Record<string, Tensor | number> = {};
          for (const [k, v] of Object.entries(s))
            entry[k] = typeof v === 'number' ? v : new Tensor({ data: v.slice(), shape: p.shape, dtype: 'float32' });
          state[index] = entry;
        }
        ids.push(index++);
      }
      paramGroups.push({ ...structuredClone(hyper), ...(initialLr !== undefined ? { initialLr } : {}), params: ids });
    }
    return { version: STATE_DICT_VERSION, state, paramGroups };
  }

  /** Restores hyperparameters and state; groups must have the same sizes as this optimizer's. */
  loadStateDict(sd: OptimizerStateDict): void {
    if (!sd || sd.version !== STATE_DICT_VERSION || !Array.isArray(sd.paramGroups)) {
      throw new StateDictError({
        detail: `${this.name}: expected an optimizer state dict of version ${STATE_DICT_VERSION}`,
      });
    }
    if (sd.paramGroups.length !== this.paramGroups.length) {
      throw new StateDictError({
        detail: `${this.name}: state dict has ${sd.paramGroups.length} parameter groups, optimizer has ${this.paramGroups.length}`,
      });
    }
    sd.paramGroups.forEach((g, i) => {
      if (g.params.length !== this.paramGroups[i]!.params.length) {
        throw new StateDictError({
          detail: `${this.name}: parameter group ${i} has ${g.params.length} parameters in the state dict and ${this.paramGroups[i]!.params.length} in the optimizer`,
        });
      }
    });
    const newState = new Map<Tensor, ParamState>();
    sd.paramGroups.forEach((g, gi) => {
      const group = this.paramGroups[gi]!;
      const { params: ids, ...hyper } = g;
      ids.forEach((id, k) => {
        const p = group.params[k]!;
        const s = sd.state[id];
        if (!s) return;
        const restored: ParamState = {};
        for (const [key, v] of Object.entries(s)) {
          if (typeof v === 'number') restored[key] = v;
          else {
            if (v.size !== p.size) {
              throw new StateDictError({
                shapeMismatches: [{ key: `state.${id}.${key}`, expected: p.shape, got: v.shape }],
              });
            }
            restored[key] = Float32Array.from(v.values());
          }
        }
        newState.set(p, restored);
      });
      const { initialLr, ...rest } = hyper as { initialLr?: number };
      const { params: _p, initialLr: current, ...own } = group;
      Object.assign(group, parseOptions(`${this.name} param group ${gi}`, this.hyperSchema, { ...own, ...rest }));
      group.initialLr = initialLr ?? current;
    });
    this.state.clear();
    for (const [p, s] of newState) this.state.set(p, s);
  }
}

/** The parameter's storage as a Float32Array view (parameters are contiguous float32, checked when added). */
export function paramData(p: Tensor): Float32Array {
  return (p.data as Float32Array).subarray(p.offset, p.offset + p.size);
}

/** The gradient as row-major float32 values, checked against the parameter's size. */
export function gradData(p: Tensor, who: string): Float32Array {
  const g = p.grad!;
  if (g.size !== p.size) {
    throw new InvalidArgumentError(
      `${who}: gradient [${g.shape.join(', ')}] does not match parameter [${p.shape.join(', ')}]`,
    );
  }
  const v = g.values();
  return v instanceof Float32Array ? v : Float32Array.from(v);
}

/**
 * An optimizer state dict as a tensor state dict (`state.<index>.<key>` tensors, the rest in
 * `metadata`), so it can be written with `saveStateDict`.
 */
export function optimizerStateToStateDict(osd: OptimizerStateDict): StateDict {
  const tensors: Record<string, Tensor> = {};
  const scalars: Record<string, Record<string, number>> = {};
  for (const [id, s] of Object.entries(osd.state)) {
    for (const [k, v] of Object.entries(s)) {
      if (typeof v === 'number') {
        scalars[id] ??= {};
        scalars[id][k] = v;
      } else tensors[`state.${id}.${k}`] = v;
    }
  }
  return {
    version: STATE_DICT_VERSION,
    tensors,
    metadata: { kind: 'optimizer', paramGroups: osd.paramGroups, scalars },
  };
}

export function optimizerStateFromStateDict(sd: StateDict): OptimizerStateDict {
  const meta = sd.metadata as
    | {
        kind?: string;
        paramGroups?: OptimizerStateDict['paramGroups'];
        scalars?: Record<string, Record<string, number>>;
      }
    | undefined;
  if (meta?.kind !== 'optimizer' || !Array.isArray(meta.paramGroups)) {
    throw new StateDictError({ detail: 'not an optimizer state dict (metadata.kind is not "optimizer")' });
  }
  const state: OptimizerStateDict['state'] = {};
  for (const [id, s] of Object.entries(meta.scalars ?? {})) state[Number(id)] = { ...s };
  for (const [key, t] of Object.entries(sd.tensors)) {
    const m = /^state\.(\d+)\.(.+)$/.exec(key);
    if (!m) throw new StateDictError({ unexpectedKeys: [key] });
    const id = Number(m[1]);
    state[id] ??= {};
    state[id][m[2]!] = t;
  }
  return { version: STATE_DICT_VERSION, state, paramGroups: meta.paramGroups };
}
