// Structural checks of an ONNX graph before import: every value has exactly one source, the graph is
// acyclic (nodes are put in topological order) and has outputs. Each error names the node or value at fault.
import { OnnxFormatError } from './errors.js';
import type { GraphMsg, NodeMsg } from './onnx-schema.js';

const nodeLabel = (n: NodeMsg, i: number) => `'${n.name || `${n.op_type ?? 'node'}_${i}`}'`;

/** A path of node indices from `from` back to `to` through the producers of their inputs, or null. */
function dependencyPath(nodes: readonly NodeMsg[], producer: ReadonlyMap<string, number>, from: number, to: number): number[] | null {
  const seen = new Set<number>();
  const stack: [number, number[]][] = [[from, [from]]];
  while (stack.length > 0) {
    const [k, path] = stack.pop()!;
    if (k === to) return path;
    if (seen.has(k)) continue;
    seen.add(k);
    for (const input of nodes[k]!.input ?? []) {
      const p = producer.get(input);
      if (p !== undefined && !seen.has(p)) stack.push([p, [...path, p]]);
    }
  }
  return null;
}

/**
 * Throws OnnxFormatError for a graph ONNX forbids: no outputs, values with two producers, inputs
 * nothing produces, cycles, a graph output listed twice. Nodes out of topological order, which
 * onnxruntime accepts, are reported through `warn` and returned sorted. Returns the nodes in order.
 */
export function checkGraph(g: GraphMsg, fixed: ReadonlySet<string>, warn: (message: string) => void): NodeMsg[] {
  const outputs = (g.output ?? []).map((o) => o.name ?? '');
  if (outputs.length === 0) throw new OnnxFormatError('importOnnx: the graph has no outputs; an ONNX graph must declare at least one');
  const listed = new Set<string>();
  for (const o of outputs) {
    if (listed.has(o)) throw new OnnxFormatError(`importOnnx: graph output '${o}' is listed twice; output names must be unique`);
    listed.add(o);
  }

  const sources = new Map<string, string>();
  for (const vi of g.input ?? []) sources.set(vi.name ?? '', 'a graph input');
  for (const init of g.initializer ?? []) sources.set(init.name ?? '', 'an initializer');
  for (const name of fixed) sources.set(name, 'a fixed input');
  const nodes = g.node ?? [];
  const producer = new Map<string, number>();
  let unsorted: string | undefined;
  nodes.forEach((n, i) => {
    for (const o of n.output ?? []) {
      if (!o) continue;
      const p = producer.get(o);
      if (p !== undefined) {
        throw new OnnxFormatError(`importOnnx: value '${o}' is produced by both ${nodeLabel(nodes[p]!, p)} and ${nodeLabel(n, i)}; every value must have one producer`);
      }
      const src = sources.get(o);
      if (src) throw new OnnxFormatError(`importOnnx: node ${nodeLabel(n, i)} writes '${o}', which is already ${src}; every value must have one producer`);
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
      const path = dependencyPath(nodes, producer, p, i);
      if (path) {
        throw new OnnxFormatError(
          `importOnnx: the graph has a cycle: ${[i, ...path].map((k) => nodeLabel(nodes[k]!, k)).join(' → ')} (each reads an output of the next); ONNX graphs must be acyclic`,
        );
      }
      unsorted ??= `node ${nodeLabel(n, i)} reads '${input}' before node ${nodeLabel(nodes[p]!, p)} produces it`;
    }
  });

  for (const o of outputs) {
    if (!sources.has(o) && !producer.has(o)) {
      throw new OnnxFormatError(`importOnnx: graph output '${o}' is produced by no node and is no graph input or initializer`);
    }
  }
  if (unsorted === undefined) return nodes;
  warn(`importOnnx: ${unsorted}; ONNX requires nodes in topological order, so QTK sorted them`);
  return topologicalOrder(nodes, producer);
}

/** The nodes in an order where each comes after the producers of its inputs (the graph is acyclic), otherwise as given. */
function topologicalOrder(nodes: readonly NodeMsg[], producer: ReadonlyMap<string, number>): NodeMsg[] {
  const placed = new Set<number>();
  const order: NodeMsg[] = [];
  const place = (root: number) => {
    const stack: [number, boolean][] = [[root, false]];
    while (stack.length > 0) {
      const [k, ready] = stack.pop()!;
      if (placed.has(k)) continue;
      if (ready) {
        placed.add(k);
        order.push(nodes[k]!);
        continue;
      }
      stack.push([k, true]);
      for (const input of [...(nodes[k]!.input ?? [])].reverse()) {
        const p = producer.get(input);
        if (p !== undefined && !placed.has(p)) stack.push([p, false]);
      }
    }
  };
  nodes.forEach((_, i) => place(i));
  return order;
}
