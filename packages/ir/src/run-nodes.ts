import type { Module } from '@qtk/nn';
import { noGrad, traceables } from '@qtk/tensor';
import type { GraphModule } from './graph-module.js';
import type { Argument, Node } from './node.js';

/** The module at a dotted path ('' is the model itself). */
export function subAt(gm: GraphModule, path: string): Module {
  return path === '' ? gm : gm.getSubmodule(path);
}

/** The submodule or plain attribute at a dotted path (what a get_attr node reads). */
export function attrAt(gm: GraphModule, path: string): unknown {
  const parts = path.split('.');
  let owner: Module = gm;
  for (const p of parts.slice(0, -1)) owner = owner.getChild(p)!;
  const last = parts[parts.length - 1]!;
  return owner.getChild(last) ?? (owner as unknown as Record<string, unknown>)[last];
}

const isPlainObject = (a: unknown): a is Record<string, unknown> =>
  a !== null && typeof a === 'object' && Object.getPrototypeOf(a) === Object.prototype;

/** The runtime values of an FX argument (nodes replaced by their values, nested lists and plain objects included). */
export function mapValues(a: Argument, env: ReadonlyMap<Node, unknown>): unknown {
  if (Array.isArray(a)) return a.map((x) => mapValues(x as Argument, env));
  if (a && typeof a === 'object' && (a as object).constructor?.name === 'Node') return env.get(a as Node);
  if (isPlainObject(a))
    return Object.fromEntries(Object.entries(a).map(([k, v]) => [k, mapValues(v as Argument, env)]));
  return a;
}

export interface RunNodesOptions {
  /**
   * Called before each node runs with its argument values; what it returns is used instead (the
   * profiler feeds a node another model's values this way). Values of earlier nodes are unchanged.
   */
  readonly replaceArgs?: (node: Node, args: unknown[], env: ReadonlyMap<Node, unknown>) => unknown[];
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
  options: RunNodesOptions = {},
): unknown {
  const env = new Map<Node, unknown>();
  const placeholders = gm.graph.placeholders;
  const wasTraining = gm.training;
  gm.eval();
  try {
    return noGrad(() => {
      let result: unknown;
      for (const node of gm.graph.nodes) {
        let args = node.args.map((a) => mapValues(a, env));
        if (options.replaceArgs && node.op !== 'placeholder' && node.op !== 'output' && node.op !== 'get_attr') {
          args = options.replaceArgs(node, args, env);
        }
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
