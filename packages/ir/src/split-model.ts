// Segmented deployment: one model, trained and converted as a whole, cut into consecutive
// GraphModules that run one after another (e.g. a backbone on the accelerator, a CPU step, a head).
import { Module, Parameter, deepCopy } from '@qtk/nn';
import { InvalidArgumentError, QtkError, Tensor } from '@qtk/tensor';
import { Graph } from './graph.js';
import { GraphModule } from './graph-module.js';
import type { JsonValue } from './module-codecs.js';
import { forEachNode, type Node } from './node.js';

export interface SplitModelOptions {
  /**
   * Node names (as `printTabular()` lists them), in graph order: the value each one produces
   * ends a segment and is the first input of the next. K names give K + 1 segments.
   */
  at: readonly string[];
}

/** What `meta.segment` of each segment records (JSON, kept by the model file). */
export interface SegmentInfo {
  /** 0-based position of the segment. */
  readonly index: number;
  readonly count: number;
  /** Names, in the whole model, of the values the segment takes (graph inputs for the first). */
  readonly inputs: readonly string[];
  /** Names of the values it hands to the next segment; the last segment returns the model's output. */
  readonly outputs: readonly string[];
}

/** A cut `splitModel` cannot make: names the node and says what to ask instead. */
export class SplitModelError extends QtkError {
  static readonly code = 'E_SPLIT_MODEL';
  /** The node name the problem is about, when there is one. */
  readonly node: string | null;
  constructor(message: string, node: string | null = null) {
    super('E_SPLIT_MODEL', `splitModel: ${message}`);
    this.node = node;
  }
}

/** The calls a node's segment must be able to make: module paths (with everything under them) and root attributes. */
interface Needs {
  modules: Set<string>;
  rootAttrs: Set<string>;
}

function compareNames(names: readonly string[]): string {
  const shown = names.slice(0, 12);
  return `${shown.join(', ')}${names.length > shown.length ? `, ... (${names.length} in all)` : ''}`;
}

/** The cut nodes, checked: known, splittable, distinct, in graph order, each leaving work for the next segment. */
function cutNodes(model: GraphModule, at: readonly string[]): Node[] {
  const nodes = model.graph.nodes;
  const position = new Map(nodes.map((n, i) => [n, i]));
  const computing = nodes.filter((n) => n.op !== 'placeholder' && n.op !== 'output' && n.op !== 'get_attr');
  const cuts: Node[] = [];
  const named = new Set<string>();
  for (const name of at) {
    if (typeof name !== 'string') throw new SplitModelError(`cut points are node names (strings), got ${typeof name}`);
    const node = model.graph.node(name);
    if (!node) {
      throw new SplitModelError(
        `the model (${model.className}) has no node '${name}'; cut at the name of a node that computes a value: ${compareNames(computing.map((n) => n.name))}`,
        name,
      );
    }
    if (node.op === 'placeholder' || node.op === 'output' || node.op === 'get_attr') {
      throw new SplitModelError(
        `'${name}' is a${node.op === 'output' ? 'n' : ''} ${node.op} node; cut after a node that computes a value (call_module, call_function or call_method)`,
        name,
      );
    }
    if (named.has(name)) throw new SplitModelError(`'${name}' is named twice in 'at'; name each cut once`, name);
    named.add(name);
    const prev = cuts[cuts.length - 1];
    if (prev && position.get(prev)! > position.get(node)!) {
      throw new SplitModelError(
        `'${name}' comes before '${prev.name}' in the graph, but after it in 'at'; list the cuts in graph order`,
        name,
      );
    }
    cuts.push(node);
  }
  if (cuts.length === 0) throw new SplitModelError("'at' names no node; give at least one cut");
  const last = cuts[cuts.length - 1]!;
  if (!computing.some((n) => position.get(n)! > position.get(last)!)) {
    throw new SplitModelError(
      `'${last.name}' is the model's last computing node; a cut there leaves the last segment nothing to run`,
      last.name,
    );
  }
  return cuts;
}

/** What running `node` needs from the model: the module it calls (with its subtree) or the attribute it reads. */
function addNeeds(model: GraphModule, node: Node, needs: Needs): void {
  if (node.op === 'call_module') {
    if (node.target === '') {
      // an fxWrap-ed method of the root: the wrapped code may use any child
      for (const [name] of model.namedChildren()) needs.modules.add(name);
    } else needs.modules.add(node.target);
  } else if (node.op === 'get_attr') {
    const dot = node.target.lastIndexOf('.');
    if (dot >= 0) needs.modules.add(node.target.slice(0, dot));
    else if (model.getChild(node.target)) needs.modules.add(node.target);
    else needs.rootAttrs.add(node.target);
  }
}

/** The needed paths not under another needed path (copying the outer module copies them), in the model's module order. */
function outermost(model: GraphModule, paths: ReadonlySet<string>): string[] {
  const all = [...paths];
  const order = new Map(model.namedModules().map(([p], i) => [p, i]));
  return all
    .filter((p) => !all.some((q) => q !== p && p.startsWith(`${q}.`)))
    .sort((a, b) => (order.get(a) ?? 0) - (order.get(b) ?? 0));
}

/** Holds the modules and tensors one segment needs, so one deepCopy keeps what they share shared. */
class SegmentParts extends Module {
  forward(): never {
    throw new InvalidArgumentError('SegmentParts only carries modules to copy');
  }
}

/** The segment GraphModule: `graph` over deep copies of the modules and root tensors it uses. */
function segmentModule(model: GraphModule, graph: Graph, needs: Needs, info: SegmentInfo): GraphModule {
  const parts = new SegmentParts();
  const paths = outermost(model, needs.modules);
  paths.forEach((p, i) => {
    parts.registerModule(`m${i}`, model.getSubmodule(p));
  });
  const params = new Map(model.ownParameters());
  const buffers = new Map(model.ownBuffers().map(([n, t, persistent]) => [n, { t, persistent }]));
  const attrs = [...needs.rootAttrs];
  for (const [i, name] of attrs.entries()) {
    const p = params.get(name);
    const b = buffers.get(name);
    if (p) parts.registerParameter(`p${i}`, p);
    else if (b) parts.registerBuffer(`b${i}`, b.t, b.persistent);
    else {
      const v = (model as unknown as Record<string, unknown>)[name];
      const what =
        v === undefined ? 'missing' : v instanceof Tensor ? 'a tensor that is no parameter or buffer' : `a ${typeof v}`;
      throw new SplitModelError(
        `get_attr '${name}' reads a root attribute that is ${what}; a segment copies only parameters, buffers and modules (register it as a buffer of the model)`,
        name,
      );
    }
  }
  const copy = deepCopy(parts);
  const seg = new GraphModule(new SegmentParts(), graph, {
    className: `${model.className}Segment${info.index}`,
    rootObject: model.rootObject,
  });
  paths.forEach((p, i) => {
    seg.addSubmodule(p, copy.getChild(`m${i}`)!);
  });
  const copied = new Map([...copy.ownParameters(), ...copy.ownBuffers().map(([n, t]) => [n, t] as const)]);
  attrs.forEach((name, i) => {
    const p = copied.get(`p${i}`);
    if (p instanceof Parameter) seg.registerParameter(name, p);
    else seg.registerBuffer(name, copied.get(`b${i}`) as Tensor, buffers.get(name)!.persistent);
  });
  seg.training = model.training;
  const meta = JSON.parse(JSON.stringify(model.meta)) as Record<string, JsonValue>;
  seg.meta = {
    ...meta,
    segment: { index: info.index, count: info.count, inputs: [...info.inputs], outputs: [...info.outputs] },
  };
  seg.recompile();
  return seg;
}

/**
 * Cuts a GraphModule (float, QAT or fixed point) into consecutive segments at the named nodes: the
 * value node `at[k]` produces ends segment k and is the first input of segment k + 1. A value that
 * a later segment needs but that was computed before a cut (a residual branch, a graph input, an
 * output computed early) crosses it as a further output / input, after the cut value, in graph
 * order. Segments other than the last return an array of their outputs, the next one's inputs in
 * the same order (`runSegments` chains them); the last returns what the model returns. Nodes keep
 * their names, a segment's inputs are named after the values they carry, and each segment holds
 * deep copies of the modules it calls, the model's `meta` and `meta.segment` (SegmentInfo). Inside
 * a fixed-point model's quantized region the values handed over are quantized tensors.
 */
export function splitModel(model: GraphModule, options: SplitModelOptions): GraphModule[] {
  if (!(model instanceof GraphModule))
    throw new InvalidArgumentError('splitModel: expected a GraphModule (traced, prepared or converted)');
  if (!options || !Array.isArray(options.at))
    throw new InvalidArgumentError("splitModel: options.at must be an array of node names, e.g. { at: ['layer2'] }");
  const cuts = cutNodes(model, options.at);
  const nodes = model.graph.nodes;
  const position = new Map(nodes.map((n, i) => [n, i]));
  const count = cuts.length + 1;
  const cutPositions = cuts.map((c) => position.get(c)!);
  /** The segment a node runs in (a cut node ends its segment). */
  const segmentOf = (n: Node): number => cutPositions.filter((p) => p < position.get(n)!).length;

  // the values crossing boundary b (after segment b): produced in a segment <= b, read in one > b
  const crossing: Node[][] = cuts.map((cut, b) => {
    const later = nodes.filter(
      (n) => n !== cut && n.op !== 'get_attr' && segmentOf(n) <= b && n.users.some((u) => segmentOf(u) > b),
    );
    return [cut, ...later];
  });

  const segments: GraphModule[] = [];
  for (let k = 0; k < count; k++) {
    const graph = new Graph();
    const map = new Map<Node, Node>();
    const needs: Needs = { modules: new Set(), rootAttrs: new Set() };
    const inputs = k === 0 ? nodes.filter((n) => n.op === 'placeholder') : crossing[k - 1]!;
    for (const n of inputs) map.set(n, k === 0 ? graph.copyNode(n, map) : graph.placeholder(n.name));
    const copy = (n: Node): Node => {
      forEachNode([n.args, n.kwargs], (i) => {
        if (i.op === 'get_attr' && !map.has(i)) map.set(i, copy(i));
      });
      addNeeds(model, n, needs);
      return graph.copyNode(n, map);
    };
    for (const n of nodes) {
      if (n.op === 'placeholder' || n.op === 'get_attr' || n.op === 'output') continue;
      if (segmentOf(n) === k) map.set(n, copy(n));
    }
    const outputs = k < count - 1 ? crossing[k]! : [];
    if (k < count - 1) graph.output(outputs.map((n) => map.get(n)!));
    else copy(model.graph.outputNode!);
    graph.validate();
    const info: SegmentInfo = {
      index: k,
      count,
      inputs: inputs.map((n) => n.name),
      outputs: outputs.map((n) => n.name),
    };
    segments.push(segmentModule(model, graph, needs, info));
  }
  return segments;
}

/**
 * Runs segments from splitModel one after another: the first gets `inputs`, each next one the
 * array the previous returned; returns the last one's result (the whole model's output).
 */
export function runSegments(segments: readonly GraphModule[], inputs: readonly unknown[]): unknown {
  if (segments.length === 0) throw new InvalidArgumentError('runSegments: no segments to run');
  let values: readonly unknown[] = inputs;
  for (const [k, seg] of segments.entries()) {
    const out = (seg as unknown as { call(...a: unknown[]): unknown }).call(...values);
    if (k === segments.length - 1) return out;
    if (!Array.isArray(out)) {
      throw new InvalidArgumentError(
        `runSegments: segment ${k} (${seg.className}) returned ${typeof out}, not the array of values the next segment takes; pass the segments splitModel returned, in order`,
      );
    }
    values = out;
  }
  return undefined;
}
