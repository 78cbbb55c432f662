// Structural checks of an ONNX graph before import: every value has exactly one source, the graph is
// acyclic (nodes are put in topological order) and has outputs. Each error names the node or value at fault.
import { OnnxFormatError } from '../errors.js';
import type { GraphMsg, NodeMsg } from '../onnx-schema.js';

const nodeLabel = (n: NodeMsg, i: number) => `'${n.name || `${n.op_type ?? 'node'}_${i}`}'`;

/**
 * Throws OnnxFormatError for a graph ONNX forbids: no outputs, values with two producers, inputs
 * nothing produces, cycles, a graph output listed twice. Nodes out of topological order, which
 * onnxruntime accepts, are reported through `warn` and returned sorted. Returns the nodes in order.
 */
export function checkGraph(g: GraphMsg, fixed: ReadonlySet<string>, warn: (message: string) => void): NodeMsg[] {
  const outputs = (g.output ?? []).map((o) => o.name ?? '');
  if (outputs.length === 0)
    throw new OnnxFormatError('importOnnx: the graph has no outputs; an ONNX graph must declare at least one');
  const listed = new Set<string>();
  for (const o of outputs) {
    if (listed.has(o))
      throw new OnnxFormatError(`importOnnx: graph output '${o}' is listed twice; output names must be unique`);
    listed.add(o);
  }

  const sources = new Map<string, string>();
  const declare = (name: string, what: string) => {
    if (sources.get(name) === what)
      throw new OnnxFormatError(`importOnnx: ${what} '${name}' is declared twice; names must be unique`);
    sources.set(name, what);
  };
  for (const vi of g.input ?? []) declare(vi.name ?? '', 'graph input');
  for (const init of g.initializer ?? []) declare(init.name ?? '', 'initializer');
  for (const name of fixed) sources.set(name, 'fixed input');
  const nodes = g.node ?? [];
  const producer = new Map<string, number>();
  let unsorted: string | undefined;
  nodes.forEach((n, i) => {
    for (const o of n.output ?? []) {
      if (!o) continue;
      const p = producer.get(o);
      if (p !== undefined) {
        throw new OnnxFormatError(
          `importOnnx: value '${o}' is produced by both ${nodeLabel(nodes[p]!, p)} and ${nodeLabel(n, i)}; every value must have one producer`,
        );
      }
      const src = sources.get(o);
      if (src)
        throw new OnnxFormatError(
          `importOnnx: node ${nodeLabel(n, i)} writes '${o}', which is already declared as ${src === 'initializer' ? 'an' : 'a'} ${src}; every value must have one producer`,
        );
      producer.set(o, i);
    }
  });

  nodes.forEach((n, i) => {
    for (const input of n.input ?? []) {
      if (!input || sources.has(input)) continue;
      const p = producer.get(input);
      if (p === undefined) {
        throw new OnnxFormatError(
          `importOnnx: node ${nodeLabel(n, i)} (${n.op_type}) reads '${input}', which is no graph input, initializer or node output; the model is incomplete (a missing initializer?)`,
        );
      }
      if (p < i) continue;
      unsorted ??= `node ${nodeLabel(n, i)} reads '${input}' before node ${nodeLabel(nodes[p]!, p)} produces it`;
    }
  });

  for (const o of outputs) {
    if (!sources.has(o) && !producer.has(o)) {
      throw new OnnxFormatError(
        `importOnnx: graph output '${o}' is produced by no node and is no graph input or initializer`,
      );
    }
  }
  if (unsorted === undefined) return nodes;
  const order = topologicalOrder(nodes, producer);
  warn(`importOnnx: ${unsorted}; ONNX requires nodes in topological order, so QTK sorted them`);
  return order;
}

/**
 * The nodes ordered so that each comes after the producers of its inputs (a depth-first walk, linear
 * in the graph's size); throws OnnxFormatError naming the nodes of a cycle.
 */
function topologicalOrder(nodes: readonly NodeMsg[], producer: ReadonlyMap<string, number>): NodeMsg[] {
  const state = new Uint8Array(nodes.length); // 0 unseen, 1 on the current path, 2 placed
  const order: NodeMsg[] = [];
  for (let root = 0; root < nodes.length; root++) {
    if (state[root] !== 0) continue;
    // path[k] reads an output of path[k + 1]; next[k] is the input of path[k] to look at next.
    const path = [root];
    const next = [0];
    state[root] = 1;
    while (path.length > 0) {
      const k = path[path.length - 1]!;
      const inputs = nodes[k]!.input ?? [];
      const j = next[next.length - 1]!++;
      if (j < inputs.length) {
        const p = producer.get(inputs[j]!);
        if (p === undefined || state[p] === 2) continue;
        if (state[p] === 1) {
          const cycle = [...path.slice(path.indexOf(p)), p].map((c) => nodeLabel(nodes[c]!, c));
          const shown =
            cycle.length > 12 ? [...cycle.slice(0, 6), `… ${cycle.length - 11} more …`, ...cycle.slice(-5)] : cycle;
          throw new OnnxFormatError(
            `importOnnx: the graph has a cycle of ${cycle.length - 1} node(s): ${shown.join(' → ')} (each reads an output of the next); ONNX graphs must be acyclic`,
          );
        }
        state[p] = 1;
        path.push(p);
        next.push(0);
      } else {
        state[k] = 2;
        order.push(nodes[k]!);
        path.pop();
        next.pop();
      }
    }
  }
  return order;
}
