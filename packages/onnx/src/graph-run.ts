import type { Argument, GraphModule, Node } from '@qtk/ir';
import type { Module } from '@qtk/nn';
import { noGrad, Tensor, traceables } from '@qtk/tensor';
import { QTensor } from '@qtk/fixed-point';

export function subAt(gm: GraphModule, path: string): Module {
  return path === '' ? gm : gm.getSubmodule(path);
}

export function attrAt(gm: GraphModule, path: string): unknown {
  const parts = path.split('.');
  let owner: Module = gm;
  for (const p of parts.slice(0, -1)) owner = owner.getChild(p)!;
  const last = parts[parts.length - 1]!;
  return owner.getChild(last) ?? (owner as unknown as Record<string, unknown>)[last];
}

/** The runtime values of an FX argument (nodes replaced by their values, nested lists and dicts included). */
export function mapValues(a: Argument, env: Map<Node, unknown>): unknown {
  if (Array.isArray(a)) return a.map((x) => mapValues(x as Argument, env));
  if (a && typeof a === 'object' && (a as object).constructor?.name === 'Node') return env.get(a as Node);
  if (a && typeof a === 'object' && !(a instanceof Tensor) && !(a instanceof QTensor)) {
    return Object.fromEntries(Object.entries(a as Record<string, Argument>).map(([k, v]) => [k, mapValues(v, env)]));
  }
  return a;
}

/**
 * Runs a GraphModule in eval mode (gradients off) node by node, calling `visit` with each node, its value,
 * its argument values and the values so far (the output node too, its value being the model's output);
 * returns the model's output.
 */
export function runNodes(
  gm: GraphModule,
  inputs: readonly unknown[],
  visit: (node: Node, value: unknown, args: unknown[], env: ReadonlyMap<Node, unknown>) => void,
): unknown {
  const env = new Map<Node, unknown>();
  const placeholders = gm.graph.placeholders;
  const wasTraining = gm.training;
  gm.eval();
  try {
    return noGrad(() => {
      let result: unknown;
      for (const node of gm.graph.nodes) {
        const args = node.args.map((a) => mapValues(a, env));
        let out: unknown;
        switch (node.op) {
          case 'placeholder':
            out = inputs[placeholders.indexOf(node)];
            break;
          case 'get_attr':
            out = attrAt(gm, node.target);
            break;
          case 'call_module': {
            const m = subAt(gm, node.target);
            out = node.method
              ? (m as unknown as Record<string, (...a: unknown[]) => unknown>)[node.method]!(...args)
              : m.call(...args);
            break;
          }
          case 'call_function':
            out = traceables.get(node.target).fn(...args);
            break;
          case 'call_method': {
            const [self, ...rest] = args as [Record<string, (...a: unknown[]) => unknown>, ...unknown[]];
            out = self[node.target]!(...rest);
            break;
          }
          case 'output':
            result = args[0];
            visit(node, result, args, env);
            continue;
        }
        env.set(node, out);
        visit(node, out, args, env);
      }
      return result;
    });
  } finally {
    if (wasTraining) gm.train();
  }
}
