// The deploy-device report of a prepared (QAT) or converted (fixed-point) model: read from the
// device each op was given at prepare (node meta, kept by conversion and model files).
import {
  DEPLOY_DETAIL,
  DEPLOY_REASON,
  type DeployDevice,
  type DeployReason,
  deployDeviceOf,
  QatModule,
} from '@qtk/core';
import { GraphModule, type Node } from '@qtk/ir';
import { InvalidArgumentError } from '@qtk/tensor';

export interface DeployedNode {
  /** The module path of a module call, else the node name. */
  readonly name: string;
  /** Module call, or the function / tensor method it calls. */
  readonly kind: 'module' | 'function' | 'method';
  /** The module class (for a call of a module; a QAT module's float class) or the function / method name. */
  readonly type: string;
  readonly device: DeployDevice;
  readonly reason: DeployReason;
  readonly detail: string | null;
  /** For a fused module: the nodes of the float model it absorbed. */
  readonly fusedFrom: readonly string[];
}

export interface DeploySegment {
  readonly device: DeployDevice;
  /** Names of its ops, in graph order. */
  readonly nodes: readonly string[];
}

export interface DeployMismatch {
  readonly name: string;
  readonly expected: DeployDevice;
  /** null when the model has no op of that name. */
  readonly actual: DeployDevice | null;
}

export interface DeployDeviceReport {
  readonly nodes: readonly DeployedNode[];
  readonly counts: { readonly BPU: number; readonly CPU: number };
  /** Producer → consumer edges between ops on different devices. */
  readonly transitions: number;
  /** Connected runs of ops on one device, in the order of their first op. */
  readonly segments: readonly DeploySegment[];
  /** Differences from `expected` (empty without it). */
  readonly mismatches: readonly DeployMismatch[];
}

export interface CheckDeployDeviceOptions {
  /** The device each named op should run on (names as in the report). */
  readonly expected?: Readonly<Record<string, DeployDevice>>;
}

const nameOf = (n: Node) => (n.op === 'call_module' ? n.target : n.name);

/** The ops feeding `node`, looking through stubs, fake-quants and quantize / dequantize (nodes without a device). */
function producers(node: Node): Set<Node> {
  const found = new Set<Node>();
  const seen = new Set<Node>();
  const stack = [...node.inputNodes];
  while (stack.length) {
    const n = stack.pop()!;
    if (seen.has(n)) continue;
    seen.add(n);
    if (deployDeviceOf(n) !== null) found.add(n);
    else stack.push(...n.inputNodes);
  }
  return found;
}

/**
 * Where each op of `model` runs when deployed (BPU or CPU) and why, the number of CPU↔BPU
 * transitions and the segments. `model` is a QAT model from prepareQatFx (with or without
 * `hybrid`) or its convertFx result; float models have no devices yet.
 */
export function checkDeployDevice(model: GraphModule, options: CheckDeployDeviceOptions = {}): DeployDeviceReport {
  if (!(model instanceof GraphModule))
    throw new InvalidArgumentError('checkDeployDevice: expected a GraphModule from prepareQatFx or convertFx');
  const ops = model.graph.nodes.filter((n) => deployDeviceOf(n) !== null);
  if (ops.length === 0)
    throw new InvalidArgumentError(
      'checkDeployDevice: the model records no deploy devices; pass the result of prepareQatFx (e.g. with { hybrid: true }) or of convertFx',
    );
  const nodes: DeployedNode[] = ops.map((n) => {
    const outer = n.op === 'call_module' ? model.getSubmodule(n.target) : null;
    const module = outer instanceof QatModule ? outer.module : outer;
    return {
      name: nameOf(n),
      kind: n.op === 'call_module' ? 'module' : n.op === 'call_function' ? 'function' : 'method',
      type: module ? module.constructor.name + (n.method ? `.${n.method}` : '') : n.target,
      device: deployDeviceOf(n)!,
      reason: (n.meta[DEPLOY_REASON] as DeployReason | undefined) ?? 'supported',
      detail: (n.meta[DEPLOY_DETAIL] as string | undefined) ?? null,
      fusedFrom: Array.isArray(n.meta.fusedFrom) ? (n.meta.fusedFrom as string[]) : [],
    };
  });

  // segments: union of producer → consumer edges between ops on one device
  const index = new Map(ops.map((n, i) => [n, i]));
  const parent = ops.map((_, i) => i);
  const find = (i: number): number => {
    while (parent[i] !== i) i = parent[i] = parent[parent[i]!]!;
    return i;
  };
  let transitions = 0;
  for (const n of ops) {
    for (const p of producers(n)) {
      if (deployDeviceOf(p) !== deployDeviceOf(n)) transitions++;
      else parent[find(index.get(p)!)] = find(index.get(n)!);
    }
  }
  const groups = new Map<number, number[]>();
  ops.forEach((_, i) => {
    const root = find(i);
    groups.set(root, [...(groups.get(root) ?? []), i]);
  });
  const segments = [...groups.values()]
    .sort((a, b) => a[0]! - b[0]!)
    .map((members) => ({ device: nodes[members[0]!]!.device, nodes: members.map((i) => nodes[i]!.name) }));

  const byName = new Map(nodes.map((d) => [d.name, d.device]));
  const mismatches = Object.entries(options.expected ?? {})
    .filter(([name, device]) => byName.get(name) !== device)
    .map(([name, expected]) => ({ name, expected, actual: byName.get(name) ?? null }));

  const count = (d: DeployDevice) => nodes.filter((n) => n.device === d).length;
  return { nodes, counts: { BPU: count('BPU'), CPU: count('CPU') }, transitions, segments, mismatches };
}
