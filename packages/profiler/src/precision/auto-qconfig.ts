// autoQconfig: raises the precision of the nodes whose int16 (or float / CPU) form recovers the most
// of the all-int8 model's loss, greedily by measured gain, within a budget of nodes and transitions.
import type { HybridDict, QConfigDict } from '@qtk/core';
import { checkDeployDevice } from '@qtk/hybrid';
import type { GraphModule } from '@qtk/ir';
import type { Module } from '@qtk/nn';
import { InvalidArgumentError } from '@qtk/tensor';
import type { EvalSet, ScoreMetric } from './output-score.js';
import {
  int16Marches,
  marchHasInt16,
  type PrecisionChange,
  type VariantSetup,
  variantConfig,
} from './precision-variants.js';
import { type SensitivityResult, sensitivity } from './sensitivity.js';
import { gainOf, openLab } from './variant-lab.js';

export interface AutoQconfigBudget {
  /** Most nodes to raise (int16 nodes, or nodes sent to the CPU). */
  readonly nodes?: number;
  /** Most CPU↔BPU transitions to add over the all-int8 model (checkDeployDevice on the prepared model). */
  readonly transitions?: number;
}

export interface AutoQconfigOptions extends VariantSetup {
  /** A node count, or limits on nodes and added transitions. */
  readonly budget: number | AutoQconfigBudget;
  readonly eval?: EvalSet;
  readonly metric?: ScoreMetric;
  /** 'int16' (default on a march with int16 activations) or 'cpu' (float on the CPU; hybrid mode uses hybridDict). */
  readonly mode?: 'int16' | 'cpu';
  /** A sensitivity table of the same model, setup and metric, to skip measuring it again. */
  readonly sensitivity?: SensitivityResult;
}

export interface AutoQconfigChoice {
  readonly name: string;
  readonly type: string;
  /** The node's own gain in the sensitivity table. */
  readonly gain: number;
  /** The measured score once this node and the ones before it are raised. */
  readonly scoreAfter: number | null;
  /** CPU↔BPU transitions of the prepared model with the choices so far (null when unknown). */
  readonly transitionsAfter: number | null;
}

export interface AutoQconfigResult {
  readonly version: 1;
  readonly march: string;
  readonly metric: ScoreMetric;
  readonly mode: 'int16' | 'cpu';
  /**
   * The qconfig dict to pass to prepareQatFx: the baseline with int16 qconfigs (or null, for 'cpu'
   * outside hybrid mode) for the chosen nodes. Its qconfigs are factories: JSON shows the names only.
   */
  readonly qconfigDict: QConfigDict;
  /** In hybrid 'cpu' mode, the hybridDict sending the chosen nodes to the CPU; else the base one or null. */
  readonly hybridDict: HybridDict | null;
  /** The raised nodes, in the order they were accepted. */
  readonly chosen: readonly AutoQconfigChoice[];
  /** Nodes tried and left out, with why. */
  readonly rejected: readonly { readonly name: string; readonly reason: string }[];
  /**
   * float and all-int8 scores; predicted = int8 + the chosen nodes' single gains (additive estimate);
   * measured = the score of the returned configuration.
   */
  readonly scores: {
    readonly float: number | null;
    readonly int8: number | null;
    readonly predicted: number | null;
    readonly measured: number | null;
  };
  readonly budget: { readonly nodes: number | null; readonly transitions: number | null };
  /** Transitions of the all-int8 and of the returned configuration (prepared models). */
  readonly transitions: { readonly int8: number | null; readonly final: number | null };
  /** Nodes of the model that can be raised, for the 10 %-of-nodes kind of budget. */
  readonly quantizableNodes: number;
  readonly sensitivity: SensitivityResult;
  readonly cost: { readonly variants: number; readonly seconds: number };
}

function transitionsOf(prepared: GraphModule): number | null {
  try {
    return checkDeployDevice(prepared).transitions;
  } catch {
    return null; // no deploy devices recorded (nothing quantized)
  }
}

function budgetOf(b: number | AutoQconfigBudget): { nodes: number | null; transitions: number | null } {
  const o = typeof b === 'number' ? { nodes: b } : b;
  for (const [k, v] of Object.entries(o))
    if (v !== undefined && !(Number.isInteger(v) && v >= 0))
      throw new InvalidArgumentError(`autoQconfig: budget.${k} must be a whole number ≥ 0, got ${String(v)}`);
  if (o.nodes === undefined && o.transitions === undefined)
    throw new InvalidArgumentError('autoQconfig: give a budget: a node count, or { nodes, transitions }');
  return { nodes: o.nodes ?? null, transitions: o.transitions ?? null };
}

/**
 * Chooses which nodes of `floatModel` to raise above int8 on `options.march`: int16 activations on a
 * march that has them, else (mode 'cpu') float on the CPU. Nodes are tried in order of their single
 * gain in the sensitivity table; each is kept when the measured score of all choices so far improves
 * and the budget holds. Returns a qconfig dict (and hybridDict) to read, edit and pass to prepareQatFx.
 */
export function autoQconfig(floatModel: Module, options: AutoQconfigOptions): AutoQconfigResult {
  const t0 = performance.now();
  const budget = budgetOf(options.budget);
  const mode = options.mode ?? (marchHasInt16(options.march) ? 'int16' : 'cpu');
  if (mode === 'int16' && !marchHasInt16(options.march))
    throw new InvalidArgumentError(
      `autoQconfig: march '${options.march}' has no int16 activations; use mode 'cpu' (with prepare: { hybrid: true, partitioner: hybridPartitioner } for a hybrid march) or a march with int16 activations (${int16Marches()})`,
    );
  if (mode !== 'int16' && mode !== 'cpu')
    throw new InvalidArgumentError(`autoQconfig: unknown mode '${String(mode)}'; use 'int16' or 'cpu'`);
  floatModel.eval();
  const table =
    options.sensitivity ?? sensitivity(floatModel, { ...options, modes: [mode === 'int16' ? 'int16' : 'float'] });
  const lab = openLab(floatModel, options, options.eval, table.metric);
  const gainKey = mode === 'int16' ? 'int16Gain' : 'floatGain';
  const candidates = table.nodes
    .filter((n) => (n[gainKey] ?? 0) > 0)
    .sort((a, b) => (b[gainKey] ?? 0) - (a[gainKey] ?? 0));
  const changeOf = (names: readonly string[]): PrecisionChange =>
    mode === 'int16' ? { int16: names } : { float: names };

  const int8Transitions = transitionsOf(lab.baseline);
  let score = lab.int8Score;
  let transitions = int8Transitions;
  const chosen: AutoQconfigChoice[] = [];
  const rejected: { name: string; reason: string }[] = [];
  for (const c of candidates) {
    if (budget.nodes !== null && chosen.length >= budget.nodes) break;
    const names = [...chosen.map((x) => x.name), c.name];
    const v = lab.measure(changeOf(names));
    if (!v) {
      rejected.push({ name: c.name, reason: 'the march rejects this configuration' });
      continue;
    }
    const t = transitionsOf(v.prepared);
    if (
      budget.transitions !== null &&
      t !== null &&
      int8Transitions !== null &&
      t - int8Transitions > budget.transitions
    ) {
      rejected.push({
        name: c.name,
        reason: `${t - int8Transitions} added transitions > budget ${budget.transitions}`,
      });
      continue;
    }
    const better = (gainOf(v.score, score) ?? (v.score === null ? 1 : -1)) > 0;
    if (!better) {
      rejected.push({
        name: c.name,
        reason: `no measured gain together with the nodes chosen before (${v.score} vs ${score})`,
      });
      continue;
    }
    score = v.score;
    transitions = t;
    chosen.push({ name: c.name, type: c.type, gain: c[gainKey]!, scoreAfter: v.score, transitionsAfter: t });
  }
  const config = variantConfig(options, lab.baseline, lab.nodes, changeOf(chosen.map((c) => c.name)));
  const predicted = lab.int8Score === null ? null : lab.int8Score + chosen.reduce((s, c) => s + c.gain, 0);
  return {
    version: 1,
    march: options.march,
    metric: lab.metric,
    mode,
    qconfigDict: config.qconfigDict,
    hybridDict: config.prepare.hybridDict ?? null,
    chosen,
    rejected,
    scores: { float: lab.floatScore, int8: lab.int8Score, predicted, measured: score },
    budget,
    transitions: { int8: int8Transitions, final: transitions },
    quantizableNodes: lab.nodes.length,
    sensitivity: table,
    cost: { variants: lab.variants + table.cost.variants, seconds: (performance.now() - t0) / 1000 },
  };
}
