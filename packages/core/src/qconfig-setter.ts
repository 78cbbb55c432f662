// qconfig setters: functions that read the fused graph and choose each node's qconfig, applied in
// order by prepareQatFx's options-only form (horizon_plugin_pytorch's `prepare(model, qconfig_setter=...)`).
import type { QConfig } from '@qtk/fake-quant';
import { type GraphModule, type Node, type Opcode, runNodes } from '@qtk/ir';
import type { Module } from '@qtk/nn';
import { type CapabilityTable, type MarchBackendV1, opOfNode, QConfigError } from '@qtk/spec';
import { InvalidArgumentError, Tensor } from '@qtk/tensor';
import { type DeployDevice, deployDeviceOf } from './deploy-device.js';
import type { PrepareContext, PreparePass } from './prepare-context.js';
import { weightedLayer } from './qat-module.js';
import { moduleOf, pathOf, qconfigOf } from './qconfig-of.js';

/** One call node of the fused graph as a setter sees it. */
export interface QconfigSetterNode {
  /** The node's name: the key of `setQconfig`, and the node's name in the prepared model. */
  readonly name: string;
  readonly node: Node;
  /** 'call_module', 'call_function' or 'call_method'. */
  readonly opcode: Opcode;
  /** The op catalog's op ('Conv', 'Gemm', 'Add', 'Sigmoid', 'Flatten', ...; a fused module its layer's); null for stubs and unknown calls. */
  readonly op: string | null;
  /** The called module (the fused module for a fused node); null for functions and tensor methods. */
  readonly module: Module | null;
  /** The module path (call_module target), else the path of the module whose forward made the call. */
  readonly path: string;
  /** A conv / linear family layer, fused or not: it has a weight and can give a high-precision output. */
  readonly weighted: boolean;
  /** The op makes a new value (gets an output fake-quant); false for pass-through ops (reshape, flatten, relu). */
  readonly ownOutputScale: boolean;
  /** 'CPU' for a node a hybrid partition keeps in float (its qconfig is ignored), else 'BPU' or null. */
  readonly device: DeployDevice | null;
}

/** What a qconfig setter reads and edits. */
export interface QconfigSetterContext {
  /** The fused float graph (after the march's rewrites and any hybrid partition); read it, do not edit it. */
  readonly gm: GraphModule;
  /** The model given to prepareQatFx. */
  readonly model: Module;
  readonly march: MarchBackendV1;
  /** The march's capability table (dtypes, high-precision outputs, per-op support). */
  readonly capabilities: CapabilityTable;
  /** Every call node, in execution order. */
  readonly nodes: readonly QconfigSetterNode[];
  /** prepareQatFx's `exampleInputs`, or null when none were given. */
  readonly exampleInputs: readonly Tensor[] | null;
  /** The node's current qconfig: the last setter's, else the base qconfigDict's (null: not quantized). */
  qconfigOf(name: string): QConfig | null;
  /** Sets a node's qconfig (null: not quantized); a later setter overrides it. An unknown name throws. */
  setQconfig(name: string, qconfig: QConfig | null): void;
  /** The float output shape of a node on `exampleInputs` (the model runs once, on the first call); null for a non-tensor output. */
  shapeOf(name: string): readonly number[] | null;
  /**
   * A separate QAT model of the same input, prepared with the same options and these node qconfigs
   * (nodes not listed keep their current ones): to calibrate or measure before choosing. Node
   * names are the same in it.
   */
  prepare(qconfigs: ReadonlyMap<string, QConfig | null>): GraphModule;
  warn(message: string): void;
}

/**
 * A qconfig setter: a function of the context that edits qconfigs with `setQconfig` or returns
 * node name → qconfig (applied after it returns); or a named one (the built-in templates), whose
 * name errors mention.
 */
export type QconfigSetter = ((ctx: QconfigSetterContext) => QconfigSetterResult) | NamedQconfigSetter;

/** What a setter returns: nothing (it called setQconfig), or node name → qconfig. */
// biome-ignore lint/suspicious/noConfusingVoidType: a setter written as `(ctx) => { ctx.setQconfig(...) }` returns void
export type QconfigSetterResult = void | Readonly<Record<string, QConfig | null>>;

/** A setter with a name that errors and warnings use (the built-in templates). */
export interface NamedQconfigSetter {
  readonly name: string;
  apply(ctx: QconfigSetterContext): QconfigSetterResult;
}

/** What the setter pass needs from prepareQatFx beyond the prepare context. */
export interface QconfigSetterRun {
  readonly setters: readonly QconfigSetter[];
  readonly exampleInputs: readonly Tensor[] | null;
  /** Prepares the same input with the same options and these node qconfigs (ctx.prepare). */
  readonly prepareWith: (qconfigs: ReadonlyMap<string, QConfig | null>) => GraphModule;
}

export const QCONFIG_SETTERS_PASS = 'qconfig-setters';

function isQConfig(q: unknown): q is QConfig {
  return q !== null && typeof q === 'object' && 'activation' in q && 'weight' in q;
}

/** exampleInputs as a list, checked: tensors, one per graph input. */
export function checkExampleInputs(inputs: unknown, gm: GraphModule): readonly Tensor[] | null {
  if (inputs === undefined || inputs === null) return null;
  const list = Array.isArray(inputs) ? inputs : [inputs];
  list.forEach((t, i) => {
    if (!(t instanceof Tensor))
      throw new InvalidArgumentError(
        `prepareQatFx: exampleInputs[${i}] is not a Tensor; pass one tensor per model input (a Tensor or Tensor[])`,
      );
  });
  const n = gm.graph.placeholders.length;
  if (list.length !== n)
    throw new InvalidArgumentError(
      `prepareQatFx: the model takes ${n} input(s) (${gm.graph.placeholders.map((p) => p.name).join(', ')}) but exampleInputs has ${list.length}`,
    );
  return list as Tensor[];
}

const setterName = (s: QconfigSetter, i: number): string =>
  typeof s === 'function' ? `qconfigSetter[${i}]${s.name ? ` (${s.name})` : ''}` : `qconfigSetter[${i}] (${s.name})`;

function describeNode(ctx: PrepareContext, node: Node): QconfigSetterNode {
  const module = moduleOf(ctx.gm, node);
  const match = opOfNode(ctx.gm, node);
  return {
    name: node.name,
    node,
    opcode: node.op,
    op: match?.op ?? null,
    module,
    path: pathOf(node),
    weighted: module !== null && weightedLayer(module) !== null,
    ownOutputScale: match?.ownOutputScale ?? false,
    device: deployDeviceOf(node),
  };
}

function shapesOnce(gm: GraphModule, inputs: readonly Tensor[] | null): () => Map<string, readonly number[] | null> {
  let shapes: Map<string, readonly number[] | null> | null = null;
  return () => {
    if (shapes) return shapes;
    if (!inputs)
      throw new InvalidArgumentError(
        'qconfig setter: shapeOf needs the model run once; pass exampleInputs to prepareQatFx({ march, exampleInputs, qconfigSetter })',
      );
    const found = new Map<string, readonly number[] | null>();
    runNodes(gm, inputs, (node, value) => found.set(node.name, value instanceof Tensor ? [...value.shape] : null));
    shapes = found;
    return found;
  };
}

/**
 * The pass that runs the setters on the fused graph (before the QAT swap) and records their
 * per-node qconfigs in `ctx.nodeQconfigs`, where qconfigOf reads them.
 */
export function qconfigSettersPass(run: QconfigSetterRun): PreparePass {
  return {
    name: QCONFIG_SETTERS_PASS,
    run(ctx: PrepareContext) {
      const calls = ctx.gm.graph.nodes.filter(
        (n) => n.op === 'call_module' || n.op === 'call_function' || n.op === 'call_method',
      );
      const byName = new Map(calls.map((n) => [n.name, n]));
      const chosen = new Map<Node, QConfig | null>();
      for (const n of calls) chosen.set(n, qconfigOf(ctx, n).qconfig);
      const nodeOf = (name: string, who: string): Node => {
        const n = byName.get(name);
        if (!n)
          throw new QConfigError(
            `${who}: no node '${name}' in the fused graph; its nodes are ${[...byName.keys()].join(', ')}`,
          );
        return n;
      };
      const shapes = shapesOnce(ctx.gm, run.exampleInputs);
      let who = 'qconfig setter';
      const set = (name: string, q: QConfig | null): void => {
        if (q !== null && !isQConfig(q))
          throw new QConfigError(
            `${who}: the qconfig for '${name}' must be a QConfig ({ activation, weight }) or null`,
          );
        chosen.set(nodeOf(name, who), q);
      };
      const setterCtx: QconfigSetterContext = {
        gm: ctx.gm,
        model: ctx.input,
        march: ctx.march,
        capabilities: ctx.march.capabilities,
        nodes: calls.map((n) => describeNode(ctx, n)),
        exampleInputs: run.exampleInputs,
        qconfigOf: (name) => chosen.get(nodeOf(name, who)) ?? null,
        setQconfig: set,
        shapeOf: (name) => {
          nodeOf(name, who);
          return shapes().get(name) ?? null;
        },
        prepare: (qconfigs) => {
          const all = new Map<string, QConfig | null>();
          for (const [n, q] of chosen) all.set(n.name, q);
          for (const [name, q] of qconfigs) {
            nodeOf(name, who);
            all.set(name, q);
          }
          return run.prepareWith(all);
        },
        warn: (m) => ctx.warn(m),
      };
      run.setters.forEach((setter, i) => {
        who = setterName(setter, i);
        const result = typeof setter === 'function' ? setter(setterCtx) : setter.apply(setterCtx);
        if (result !== undefined && result !== null) {
          if (typeof result !== 'object')
            throw new QConfigError(`${who}: a setter returns nothing or an object { nodeName: qconfig }`);
          for (const [name, q] of Object.entries(result)) set(name, q);
        }
      });
      warnSharedModules(ctx, calls, chosen);
      ctx.nodeQconfigs = chosen;
    },
  };
}

/** A module called by several nodes is swapped once, with its first call's qconfig: say so when the setters chose differently. */
function warnSharedModules(
  ctx: PrepareContext,
  calls: readonly Node[],
  chosen: ReadonlyMap<Node, QConfig | null>,
): void {
  const first = new Map<string, Node>();
  for (const n of calls) {
    if (n.op !== 'call_module' || n.method !== undefined) continue;
    const f = first.get(n.target);
    if (!f) {
      first.set(n.target, n);
      continue;
    }
    if (chosen.get(f) !== chosen.get(n))
      ctx.warn(
        `qconfig setters gave '${n.name}' another qconfig than '${f.name}', but both call module '${n.target}', which has one QAT form: ` +
          `the qconfig of '${f.name}' applies to both; give each call its own module to quantize them differently`,
      );
  }
}
