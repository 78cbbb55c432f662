// Which dims of an imported value follow the dynamic batch. The import computes every value once, at the
// example batch; a dim that equals the batch there may also be a constant that happens to be equal (batch 1 and a
// size-1 axis). The probe runs the graph built so far a second time, lazily and only as far as a Shape node asks,
// with each free-batch input one sample longer: the dims that change are the ones computed from the batch,
// wherever transposes and reshapes moved them (a sequence-first attention's batch is axis 1). It holds its values
// to a budget of its own, as large as the import's; over it, the probe stops and Shape falls back to the first dim.
import { mapValues, type Node } from '@qtk/ir';
import type { Module } from '@qtk/nn';
import { Tensor, cat, noGrad, split, traceables } from '@qtk/tensor';
import { ImportLimits } from './limits.js';

export class BatchProbe {
  private readonly env = new Map<Node, unknown>();
  private readonly failed = new Set<Node>();
  private cursor = 0;
  private exhausted = false;
  private readonly budget: ImportLimits;

  constructor(
    private readonly nodes: () => readonly Node[],
    private readonly modules: ReadonlyMap<string, Module>,
    private readonly constants: ReadonlyMap<string, Tensor>,
    maxElements: number,
  ) {
    this.budget = new ImportLimits(maxElements);
  }

  private told = false;

  /** True the first time it is asked: the import tells once that the probe could not answer. */
  firstMiss(): boolean {
    const first = !this.told;
    this.told = true;
    return first;
  }

  /** Records a graph input: a free-batch input runs one sample longer in the probe. */
  input(node: Node, ex: Tensor, freeBatch: boolean): void {
    const n = ex.ndim > 0 ? ex.shape[0]! : 0;
    if (!freeBatch || n === 0) this.env.set(node, ex);
    else if (this.afford(node, [n + 1, ...ex.shape.slice(1)]))
      this.env.set(node, cat([ex, n === 1 ? ex : split(ex, [1, n - 1], 0)[0]!], 0));
  }

  /** Counts a value of `shape` against the probe's budget; over it, the probe stops for good. */
  private afford(node: Node, shape: readonly number[]): boolean {
    try {
      this.budget.spend(node.name, shape);
      return true;
    } catch {
      this.exhausted = true;
      this.env.clear();
      return false;
    }
  }

  /** The shape of `node`'s value in the probe, or null when the probe could not compute it. */
  shapeOf(node: Node): readonly number[] | null {
    const nodes = this.nodes();
    const end = nodes.indexOf(node);
    if (end < 0 || this.exhausted) return null;
    noGrad(() => {
      for (; this.cursor <= end && !this.exhausted; this.cursor++) this.run(nodes[this.cursor]!);
    });
    const v = this.env.get(node);
    return v instanceof Tensor && !this.failed.has(node) && !this.exhausted ? v.shape : null;
  }

  private run(node: Node): void {
    if (this.env.has(node) || node.op === 'placeholder' || node.op === 'output') return;
    const deps = [...node.args, ...Object.values(node.kwargs)].flat(Infinity as 1) as unknown[];
    if (deps.some((a) => this.failed.has(a as Node))) {
      this.failed.add(node);
      return;
    }
    const args = node.args.map((a) => mapValues(a, this.env));
    let v: unknown;
    try {
      if (node.op === 'get_attr') v = this.constants.get(node.target);
      else if (node.op === 'call_module') v = this.modules.get(node.target)!.call(...args);
      else if (node.op === 'call_function') v = traceables.get(node.target).fn(...args);
    } catch {
      // a value baked at the example batch (the failure this probe helps avoid) stops the probe here
    }
    if (v === undefined) {
      this.failed.add(node);
      return;
    }
    if (node.op !== 'get_attr')
      for (const t of Array.isArray(v) ? v : [v]) if (t instanceof Tensor && !this.afford(node, t.shape)) return;
    this.env.set(node, v);
  }
}
