import { ReferenceNet } from '@qtk/examples';
import { symbolicTrace } from '@qtk/ir';
import { deepCopy, Module } from '@qtk/nn';
import { Generator, noGrad, randn, type Tensor } from '@qtk/tensor';

/** Returns its first input: stands in for every module to time the graph machinery alone. */
class Pass extends Module {
  forward(x: Tensor): Tensor {
    return x;
  }
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

export interface GraphOverhead {
  /** Graph machinery per forward as a percentage of an eager reference-network forward at batch 64. */
  pct: number;
  eagerMs: number;
  graphMs: number;
  machineryMs: number;
}

/**
 * Overhead of running the reference network as a GraphModule. The eager and graph forwards (eval,
 * batch 64, no grad) are timed interleaved; since their difference drowns in kernel noise, the
 * figure reported is an upper bound measured directly: the same graph with every module replaced
 * by a pass-through on a 1-element input (so the three residual adds cost next to nothing), which
 * leaves the interpreter, argument loading and Module.call dispatch.
 */
export function benchGraphOverhead({ reps }: { reps: number }): GraphOverhead {
  const g = new Generator(0);
  const model = new ReferenceNet({ generator: g }).eval();
  const gm = symbolicTrace(model).eval();
  const x = randn([64, 1, 28, 28], { generator: g });
  const eager: number[] = [];
  const graph: number[] = [];
  noGrad(() => {
    for (let i = 0; i < 2; i++) {
      model.call(x);
      gm.call(x);
    }
    for (let i = 0; i < reps; i++) {
      let t = performance.now();
      model.call(x);
      eager.push(performance.now() - t);
      t = performance.now();
      gm.call(x);
      graph.push(performance.now() - t);
    }
  });

  const stub = deepCopy(gm);
  for (const n of stub.graph.findNodes({ op: 'call_module' })) stub.setSubmodule(n.target, new Pass());
  const tiny = randn([1, 1, 1, 1], { generator: g });
  const loops = 2000;
  const machinery: number[] = [];
  noGrad(() => {
    for (let i = 0; i < loops; i++) stub.call(tiny);
    for (let r = 0; r < 5; r++) {
      const t = performance.now();
      for (let i = 0; i < loops; i++) stub.call(tiny);
      machinery.push((performance.now() - t) / loops);
    }
  });
  const eagerMs = median(eager);
  const machineryMs = median(machinery);
  return { pct: (100 * machineryMs) / eagerMs, eagerMs, graphMs: median(graph), machineryMs };
}
