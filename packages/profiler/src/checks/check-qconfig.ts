// The quantization settings of every node of a prepared (calibration or QAT) model, as
// horizon_plugin_pytorch's check_qconfig lists them: output and weight fake-quants (dtype, observer,
// per-channel, fixed scale), the dtypes flowing in and out of each node, the int16 and int32
// (high-precision) outputs, and warnings for settings that usually cost accuracy or deployment.
import { deployDeviceOf, modelInfoOf, QatModule, weightedLayer } from '@qtk/core';
import { FakeQuantize } from '@qtk/fake-quant';
import { GraphModule, type Node, subAt } from '@qtk/ir';
import { DeQuantStub, deepCopy, type Module } from '@qtk/nn';
import { type FakeQuantState, type MarchBackendV1, marches, opOfNode, type QuantDType } from '@qtk/spec';
import { InvalidArgumentError, noGrad, type Tensor } from '@qtk/tensor';
import { callNames, nodeTypeOf } from '../values/node-type.js';

/** A value's type as it flows between nodes: a quantized dtype, or float. */
export type FlowDtype = QuantDType | 'float';

export interface FakeQuantSummary {
  readonly dtype: QuantDType;
  /** The observer's registered name ('min_max', 'fixed_scale', ...). */
  readonly observer: string;
  readonly perChannel: boolean;
  /** -1 per tensor. */
  readonly chAxis: number;
  /** The scale(s) of a fixed-scale observer, else null. */
  readonly fixedScale: readonly number[] | null;
  /** LSQ: the scale is learned. */
  readonly learnable: boolean;
  readonly state: FakeQuantState;
  readonly quantMin: number;
  readonly quantMax: number;
}

export interface NodeQconfigInfo {
  /** Module path of a module call (`(i)` on repeated calls), else the node name. */
  readonly name: string;
  readonly type: string;
  /** Where the node runs once deployed (null: a stub or a node prepare gave no device). */
  readonly device: 'BPU' | 'CPU' | null;
  readonly inputDtypes: readonly FlowDtype[];
  readonly outputDtype: FlowDtype;
  /** The fake-quant of the node's output (its own, or the FakeQuantize module it is). */
  readonly activation: FakeQuantSummary | null;
  readonly weight: FakeQuantSummary | null;
}

export type QconfigWarningCode =
  | 'weight-not-per-channel'
  | 'weight-not-qint8'
  | 'fixed-scale'
  | 'int32-not-at-end'
  | 'no-activation-fake-quant'
  | 'qconfig-none-in-middle'
  | 'int16-unsupported'
  | 'input-output-dtype-differs';

export interface QconfigWarning {
  readonly code: QconfigWarningCode;
  readonly node: string;
  readonly message: string;
}

export interface CheckQconfigResult {
  readonly version: 1;
  /** The march the dtypes were checked against (null: the model records none and none was given). */
  readonly march: string | null;
  /** Every call node, in execution order. */
  readonly nodes: readonly NodeQconfigInfo[];
  readonly int16Outputs: readonly string[];
  /** High-precision outputs (a conv-family layer without an output fake-quant). */
  readonly int32Outputs: readonly string[];
  readonly warnings: readonly QconfigWarning[];
}

/** What `customCheck` is given for each checked module call of the example run. */
export interface QconfigCheckCall {
  readonly name: string;
  readonly type: string;
  /** The module as it ran (in a copy of the model: the check changes nothing of the model's). */
  readonly module: Module;
  readonly inputs: readonly unknown[];
  readonly output: unknown;
}

export interface CheckQconfigOptions {
  /** The march to check dtypes against; default the one the model was prepared for. */
  readonly march?: string | MarchBackendV1;
  /**
   * Check only the nodes whose name starts with one of these (horizon_plugin_pytorch's `prefixes`); with `types`,
   * a node matching either is checked. Default: every node. The dtypes flowing between nodes are followed
   * through the whole model either way.
   */
  readonly prefixes?: readonly string[];
  /** Check only the nodes of these types: names as the report gives them ('ConvReLU2d') or module classes. */
  // biome-ignore lint/suspicious/noExplicitAny: a constructor type that accepts every Module subclass
  readonly types?: readonly (string | (abstract new (...args: any[]) => Module))[];
  /**
   * Called after each checked module call while a copy of the model runs `exampleInputs` (horizon_plugin_pytorch's
   * `custom_check_func(module, input, output)`); what it reports is its own business.
   */
  readonly customCheck?: (call: QconfigCheckCall) => void;
  /** The inputs `customCheck` runs on (required with it). */
  readonly exampleInputs?: readonly Tensor[];
}

function summaryOf(fq: FakeQuantize): FakeQuantSummary {
  const fixed = fq.options.observer === 'fixed_scale';
  return {
    dtype: fq.dtype,
    observer: fq.options.observer,
    perChannel: fq.options.chAxis >= 0,
    chAxis: fq.options.chAxis,
    fixedScale: fixed ? Array.from(fq.scale.values() as ArrayLike<number>) : null,
    learnable: fq.options.learnable,
    state: fq.fakeQuantState,
    quantMin: fq.quantMin,
    quantMax: fq.quantMax,
  };
}

const isCall = (n: Node) => n.op === 'call_module' || n.op === 'call_function' || n.op === 'call_method';

function moduleAt(gm: GraphModule, n: Node): Module | null {
  return n.op === 'call_module' ? subAt(gm, n.target) : null;
}

const innerOf = (m: Module | null) => (m instanceof QatModule ? m.module : m);

/** Whether a value reaches only the model's outputs and DeQuantStubs, through shape-only nodes. */
function onlyFeedsOutputs(gm: GraphModule, node: Node, dtypes: ReadonlyMap<Node, FlowDtype>): boolean {
  for (const user of node.users) {
    if (user.op === 'output') continue;
    if (innerOf(moduleAt(gm, user)) instanceof DeQuantStub) continue;
    // a node that carries the int32 value on unchanged (flatten, reshape) is still the end
    if (dtypes.get(user) === 'qint32' && onlyFeedsOutputs(gm, user, dtypes)) continue;
    return false;
  }
  return true;
}

function marchOf(gm: GraphModule, option: CheckQconfigOptions['march']): MarchBackendV1 | null {
  if (option !== undefined) return typeof option === 'string' ? marches.get(option) : option;
  const id = modelInfoOf(gm)?.march;
  return id && marches.has(id) ? marches.get(id) : null;
}

/** The shortest decimal that reads back as the same float32 (scales are float32: 1e-5, not 0.0000099999997). */
function float32Text(v: number): string {
  const f = Math.fround(v);
  for (let p = 1; p < 10; p++) {
    const t = Number(f.toPrecision(p));
    if (Math.fround(t) === f) return String(t);
  }
  return String(f);
}

type NodeSelection = (name: string, type: string, inner: Module | null) => boolean;

/** Whether a node is one `prefixes` / `types` ask to check (all of them when neither is given). */
function selection(options: CheckQconfigOptions): NodeSelection {
  const prefixes = options.prefixes ?? [];
  const types = options.types ?? [];
  if (!prefixes.length && !types.length) return () => true;
  return (name, type, inner) =>
    prefixes.some((p) => name.startsWith(p)) ||
    types.some((t) => (typeof t === 'string' ? t === type : inner instanceof t));
}

/** Runs a copy of the model on `inputs`, calling `check` after each checked module call. */
function runCustomCheck(
  gm: GraphModule,
  inputs: readonly Tensor[],
  check: NonNullable<CheckQconfigOptions['customCheck']>,
  checked: NodeSelection,
): void {
  const copy = deepCopy(gm);
  const names = callNames(copy);
  const handles = [];
  for (const n of copy.graph.nodes) {
    if (n.op !== 'call_module') continue;
    const module = subAt(copy, n.target);
    const name = names.get(n) ?? n.name;
    const type = nodeTypeOf(copy, n);
    if (!module || !checked(name, type, innerOf(module))) continue;
    handles.push(
      module.registerForwardHook((m, args, output) => {
        check({ name, type, module: m, inputs: args, output });
      }),
    );
  }
  try {
    noGrad(() => copy.call(...inputs));
  } finally {
    for (const h of handles) h.remove();
  }
}

/**
 * Lists the quantization settings of each node of `qatModel` (from prepareQatFx, calibrated or
 * not) and warns about: weights quantized per tensor or not to qint8, fixed activation scales,
 * int32 outputs that feed further ops, quantized ops without an output fake-quant, float (qconfig
 * null) nodes between quantized ones, int16 activations on a march without int16, and nodes whose quantized
 * inputs have another dtype than their output. `prefixes` / `types` narrow the nodes checked; `customCheck`
 * runs the model once on `exampleInputs` and is called after each checked module call.
 */
export function checkQconfig(qatModel: GraphModule, options: CheckQconfigOptions = {}): CheckQconfigResult {
  if (
    !(qatModel instanceof GraphModule) ||
    !qatModel.graph.nodes.some((n) => moduleAt(qatModel, n) instanceof QatModule)
  )
    throw new InvalidArgumentError(
      'checkQconfig: expected a prepared model (the GraphModule prepareQatFx returns); prepare the float model first',
    );
  if (options.customCheck && !options.exampleInputs)
    throw new InvalidArgumentError('checkQconfig: customCheck runs the model; pass exampleInputs too');
  const gm = qatModel;
  const march = marchOf(gm, options.march);
  const checked = selection(options);
  const names = callNames(gm);
  const dtypes = new Map<Node, FlowDtype>();
  const nodes: NodeQconfigInfo[] = [];
  const warnings: QconfigWarning[] = [];
  const warn = (code: QconfigWarningCode, node: string, message: string) => warnings.push({ code, node, message });
  for (const n of gm.graph.nodes) {
    const inputs = n.inputNodes.map((i) => dtypes.get(i) ?? 'float');
    const module = moduleAt(gm, n);
    const inner = innerOf(module);
    const device = deployDeviceOf(n);
    const activationFq =
      module instanceof FakeQuantize ? module : module instanceof QatModule ? module.activationPostProcess : null;
    const weightFq = module instanceof QatModule ? module.weightFakeQuant : null;
    const weighted = inner !== null && weightedLayer(inner) !== null;
    let out: FlowDtype;
    if (n.op === 'placeholder' || n.op === 'get_attr') out = 'float';
    else if (activationFq) out = activationFq.dtype;
    else if (inner instanceof DeQuantStub || device === 'CPU') out = 'float';
    else if (module instanceof QatModule && weighted && inputs.some((d) => d !== 'float')) out = 'qint32';
    else out = inputs[0] ?? 'float';
    dtypes.set(n, out);
    if (!isCall(n)) continue;
    const name = names.get(n) ?? n.name;
    if (!checked(name, nodeTypeOf(gm, n), inner)) continue;
    nodes.push({
      name,
      type: nodeTypeOf(gm, n),
      device,
      inputDtypes: inputs,
      outputDtype: out,
      activation: activationFq ? summaryOf(activationFq) : null,
      weight: weightFq ? summaryOf(weightFq) : null,
    });
    if (weightFq && weightFq.options.chAxis < 0)
      warn(
        'weight-not-per-channel',
        name,
        `the weight of '${name}' is quantized per tensor; per-channel weights (chAxis 0) lose far less accuracy`,
      );
    if (weightFq && weightFq.dtype !== 'qint8')
      warn(
        'weight-not-qint8',
        name,
        `the weight of '${name}' is quantized to ${weightFq.dtype}; ${march ? `march '${march.id}' takes ${march.capabilities.weightDtypes.join(', ')} weights` : 'BPU convolutions take qint8 weights'}`,
      );
    if (activationFq?.options.observer === 'fixed_scale')
      warn(
        'fixed-scale',
        name,
        `the output of '${name}' has a fixed scale (${summaryOf(activationFq)
          .fixedScale!.map(float32Text)
          .join(
            ', ',
          )}): values beyond ±${float32Text(Math.max(...summaryOf(activationFq).fixedScale!) * activationFq.quantMax)} saturate; check that this covers the output's range or let an observer choose the scale`,
      );
    if (activationFq?.dtype === 'qint16' && march && !march.capabilities.activationDtypes.includes('qint16'))
      warn(
        'int16-unsupported',
        name,
        `'${name}' outputs qint16 but march '${march.id}' has only ${march.capabilities.activationDtypes.join(', ')} activations; give it a qint8 qconfig`,
      );
    // an int32 input is the int32-not-at-end warning's
    const quantizedInputs = [...new Set(inputs.filter((d) => d !== 'float' && d !== 'qint32'))];
    if (out !== 'float' && out !== 'qint32' && quantizedInputs.some((d) => d !== out))
      warn(
        'input-output-dtype-differs',
        name,
        `'${name}' takes ${quantizedInputs.join(' and ')} and gives ${out}: the values are requantized between dtypes there; check that its qconfig and its inputs' are meant to differ`,
      );
    const followedByFakeQuant = [...n.users].some((u) => moduleAt(gm, u) instanceof FakeQuantize);
    if (
      device === 'BPU' &&
      !activationFq &&
      !weighted &&
      !followedByFakeQuant &&
      inputs.some((d) => d !== 'float') &&
      opOfNode(gm, n, inner)?.ownOutputScale
    )
      warn(
        'no-activation-fake-quant',
        name,
        `'${name}' computes a new value range but has no output fake-quant (its qconfig has no activation), so its output has no scale; give it a qconfig with an activation (only conv-family layers have high-precision outputs)`,
      );
  }
  for (const n of gm.graph.nodes) {
    if (!isCall(n)) continue;
    const name = names.get(n) ?? n.name;
    if (!checked(name, nodeTypeOf(gm, n), innerOf(moduleAt(gm, n)))) continue;
    if (dtypes.get(n) === 'qint32' && !onlyFeedsOutputs(gm, n, dtypes))
      warn(
        'int32-not-at-end',
        name,
        `'${name}' gives a high-precision (int32) output that feeds further ops; only the model's output layers should use an "out" qconfig`,
      );
    const quantizedIn = n.inputNodes.some((i) => dtypes.get(i) !== 'float');
    const quantizedAfter = [...n.users].some((u) => u.inputNodes.length > 0 && isCall(u) && dtypes.get(u) !== 'float');
    if (n.meta.deployReason === 'qconfig null' && quantizedIn && quantizedAfter)
      warn(
        'qconfig-none-in-middle',
        name,
        `'${name}' has qconfig null between quantized ops: it runs in float on the CPU with a dequantize before and a quantize after it`,
      );
  }
  if (options.customCheck) runCustomCheck(gm, options.exampleInputs!, options.customCheck, checked);
  const outputsOf = (d: FlowDtype) => nodes.filter((x) => x.outputDtype === d && x.activation?.dtype === d);
  return {
    version: 1,
    march: march?.id ?? null,
    nodes,
    int16Outputs: outputsOf('qint16').map((x) => x.name),
    int32Outputs: nodes.filter((x) => x.outputDtype === 'qint32' && x.weight !== null).map((x) => x.name),
    warnings,
  };
}
