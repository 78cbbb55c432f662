import { FakeQuantize, getDefaultRounding, setFakeQuantize } from '@qtk/fake-quant';
import { Dequantize, parseTableOptions, Quantize, tableOptionsOf } from '@qtk/fixed-point';
import { GraphModule, mapArg, type Node } from '@qtk/ir';
import { deepCopy, Module, QuantStub } from '@qtk/nn';
import {
  marches,
  QConfigError,
  opOfNode,
  QtkError,
  UnsupportedOpError,
  type ConvertedNode,
  type MarchBackendV1,
  type NodeTableOptions,
  type QParams,
  TIED_FAKE_QUANT_METHOD,
} from '@qtk/spec';
import { InvalidArgumentError, type RoundingMode } from '@qtk/tensor';
import { copyTensorAttributes } from './copy-tensor-attributes.js';
import { getMarch } from './march.js';
import { convertNodeContext } from './node-context.js';
import { HYBRID_MODEL, modelInfoOf, recordModelInfo } from './model-info.js';
import { setDeployDevice } from './deploy-device.js';
import { isPreservedAt } from './preserve-qat-mode.js';
import { moduleOf as qatModuleOf } from './qconfig-of.js';
import { FLOAT_BOUNDARY, FLOAT_STEP } from './stepwise-float-pass.js';
import { isWrappedMethodCall } from './fx-wrapped-modules.js';
import { addWrappedMethodModules, placeWrappedMethodOwners } from './convert-wrapped.js';
import type { LateConversionEnv } from './wrapped-conversion.js';
import { QatModule } from './qat-module.js';
import { uncalibratedFakeQuants } from './calibration.js';

export interface ConvertFxOptions {
  /**
   * The march (registered id or backend); default: the march the model was prepared for (recorded
   * by prepareQatFx, when registered), else the one chosen with setMarch.
   */
  march?: string | MarchBackendV1;
  /** Receives conversion warnings (default: console.warn). */
  onWarning?: (message: string) => void;
  /** Rounding of real numbers; default: the fake-quant default (half_up unless changed). */
  rounding?: RoundingMode;
  /**
   * Lookup-table options per module path (or node name of a function call), e.g.
   * `{ 'head.sigmoid': { inputRange: [-4, 4], dividing: 'curvature' }, 'attn.softmax': { exp: { inputRange: [-8, 0] } } }`;
   * docs/march-numerics.md, "Tuning a table".
   */
  tableOptions?: Readonly<Record<string, NodeTableOptions>>;
}

/**
 * Every node a march could not convert, reported at once; or (`uncalibrated`) the fake-quants whose
 * observers never saw data, so that converting would bake their placeholder scales into the model.
 */
export class ConversionError extends QtkError {
  static readonly code = 'E_CONVERSION';
  readonly failures: readonly UnsupportedOpError[];
  /** Module paths of the fake-quants that saw no data (empty when nodes failed instead). */
  readonly uncalibrated: readonly string[];
  constructor(march: string, failures: readonly UnsupportedOpError[], uncalibrated: readonly string[] = []) {
    super(
      'E_CONVERSION',
      uncalibrated.length ? uncalibratedMessage(march, uncalibrated) : unsupportedMessage(march, failures),
      failures.length ? { cause: failures[0] } : {},
    );
    this.failures = failures;
    this.uncalibrated = uncalibrated;
  }
}

/** What a late conversion (in fxWrap-ed methods, or an eager model) converts with: its failures are ConversionErrors. */
export function lateConversionEnv(
  march: MarchBackendV1,
  rounding: RoundingMode,
  warn: (message: string) => void,
): LateConversionEnv {
  return {
    march,
    rounding,
    warn,
    fail: (e) => new ConversionError(march.id, [e]),
    failUncalibrated: (names) => new ConversionError(march.id, [], names),
  };
}

function unsupportedMessage(march: string, failures: readonly UnsupportedOpError[]): string {
  return (
    `march '${march}' cannot convert ${failures.length} node(s):\n${failures.map((f) => `  - ${f.node}: ${f.op}${reasonOf(f)}`).join('\n')}\n` +
    "run them on the CPU in a heterogeneous model (prepareQatFx(model, qconfigDict, { march, hybrid: true, partitioner: hybridPartitioner }) with hybridPartitioner from '@qtk/hybrid'; qtk quantize --hybrid), " +
    'keep them float with a null qconfig (qconfigDict moduleName: { name: null }) or as QAT modules with setPreserveQatMode, replace the ops, or choose a march whose capability table lists them.'
  );
}

const LISTED_UNCALIBRATED = 10;

function uncalibratedMessage(march: string, names: readonly string[]): string {
  const more = names.length > LISTED_UNCALIBRATED ? `\n  ... and ${names.length - LISTED_UNCALIBRATED} more` : '';
  return (
    `cannot convert for march '${march}': ${names.length} fake-quant(s) never saw data, so their scales are the placeholder 1.0:\n` +
    `${names
      .slice(0, LISTED_UNCALIBRATED)
      .map((n) => `  - ${n}`)
      .join('\n')}${more}\n` +
    'run calibrate(model, batches) (or QAT training) on the prepared model first, or load the state dict of a calibrated one.'
  );
}

function reasonOf(e: UnsupportedOpError): string {
  return e.reason ? ` (${e.reason})` : '';
}

/** The option, else the march the model was prepared for (when registered), else setMarch's. */
function resolveMarch(m: ConvertFxOptions['march'], qatModel: GraphModule): MarchBackendV1 {
  if (m !== undefined) return typeof m === 'string' ? marches.get(m) : m;
  const prepared = modelInfoOf(qatModel).march;
  if (prepared !== null && marches.has(prepared)) return marches.get(prepared);
  const current = getMarch();
  if (!current)
    throw new QConfigError(
      `convertFx: no march selected; call setMarch(id) with a registered march (${marches.names().join(', ') || 'none; import a march package'}) or pass { march } before converting`,
    );
  return current;
}

/** An inserted activation fake-quant: a bare FakeQuantize called on one value (or tied to another's scale). */
function isActivationFakeQuant(gm: GraphModule, node: Node): boolean {
  return (
    node.op === 'call_module' &&
    (node.method === undefined || node.method === TIED_FAKE_QUANT_METHOD) &&
    qatModuleOf(gm, node) instanceof FakeQuantize
  );
}

function opLabel(node: Node, module: Module | null): string {
  if (module) return node.method ? `${module.constructor.name}.${node.method}` : module.constructor.name;
  return node.op === 'call_method' ? `Tensor.${node.target}` : node.target;
}

/**
 * Converts a prepared (QAT or calibrated) GraphModule into the fixed-point model of a march: every
 * value between a QuantStub and a DeQuantStub becomes the march's quantized tensor, and every op
 * on one is replaced by the march's integer module (march.hooks.convertNode), with the qparams its
 * fake-quants observed. Activation fake-quants are absorbed into the op before them. Float parts
 * (before QuantStubs, after DeQuantStubs) are copied unchanged. Modules marked with
 * setPreserveQatMode stay QAT modules, and ops whose qconfig is null (step-wise quantization) stay
 * float, between a dequantize and a quantize. Modules called only inside fxWrap-ed methods are
 * converted when the wrapped code first calls them (LateConvertedModule); a wrapped method's result
 * is taken as float. The QAT model is not
 * modified. Every node the march cannot convert is reported at once in a ConversionError.
 * The result records its kind ('fixed-point') and march id in `meta` (modelInfoOf), which
 * saveModelFile reads.
 */
export function convertFx(qatModel: GraphModule, options: ConvertFxOptions = {}): GraphModule {
  if (!(qatModel instanceof GraphModule))
    throw new InvalidArgumentError('convertFx: expected the GraphModule returned by prepareQatFx');
  const march = resolveMarch(options.march, qatModel);
  const convertNode = march.hooks.convertNode;
  if (!convertNode)
    throw new InvalidArgumentError(
      `convertFx: march '${march.id}' has no convertNode hook, so it cannot convert models`,
    );
  const called = qatModel.graph.nodes.flatMap((n) => (n.op === 'call_module' ? [n.target] : []));
  const uncalibrated = uncalibratedFakeQuants(qatModel, called);
  if (uncalibrated.length) throw new ConversionError(march.id, [], uncalibrated);
  const warn = options.onWarning ?? ((m: string) => console.warn(`[qtk] ${m}`));
  const hybrid = qatModel.meta[HYBRID_MODEL] === true;
  const rounding = options.rounding ?? getDefaultRounding();
  const tableOptions = parseTableOptions(options.tableOptions, qatModel);

  const { graph } = qatModel.graph.clone();
  // the QAT model's root object serves `this` in root-level fxWrap-ed methods
  const out = new GraphModule(new EmptyRoot(), graph, {
    className: `${qatModel.className}FixedPoint`,
    rootObject: qatModel.rootObject,
  });
  out.training = false;
  march.hooks.prepareConvert?.(out, qatModel);
  // call_module nodes still point at the QAT model's modules until rewritten
  const moduleOf = (node: Node): Module | null => qatModuleOf(qatModel, node);

  const qparams = new Map<Node, QParams>();
  const failures: UnsupportedOpError[] = [];
  const copied = new Map<Module, Module>();
  const copyOf = (m: Module): Module => {
    let c = copied.get(m);
    if (!c) {
      c = deepCopy(m);
      c.eval();
      setFakeQuantize(c, 'VALIDATION');
      copied.set(m, c);
    }
    return c;
  };
  const place = (
    node: Node,
    name: string,
    module: Module,
    args = node.args,
    kwargs = node.kwargs,
    method?: string,
  ): Node => {
    out.addSubmodule(name, module);
    const created = graph.insertingBefore(node, () =>
      graph.callModule(name, args, kwargs, method !== undefined ? { method } : {}),
    );
    created.meta = { ...node.meta, convertedFrom: node.name };
    node.replaceAllUsesWith(created);
    const name0 = node.name;
    graph.eraseNode(node);
    created.name = name0;
    return created;
  };
  const placedNames = new Set<string>();
  /** The node's module path, or `_fixed_<node>`; a second call of one module (a shared FloatFunctional) gets `<path>_call<k>`. */
  const nameFor = (node: Node): string => {
    const base = node.op === 'call_module' ? node.target : `_fixed_${node.name}`;
    let name = base;
    for (let k = 1; placedNames.has(name); k++) name = `${base}_call${k}`;
    placedNames.add(name);
    return name;
  };

  addWrappedMethodModules(qatModel, out, copyOf, lateConversionEnv(march, rounding, warn));

  for (const node of [...graph.nodes]) {
    if (node.op === 'placeholder' || node.op === 'output' || node.op === 'get_attr') continue;
    if (isWrappedMethodCall(node)) continue; // runs as written; the modules it calls were added above
    const module = moduleOf(node);
    const qat = module instanceof QatModule ? module : null;
    const inner = qat ? qat.module : module;
    const quantizedInputs = node.inputNodes.filter((n) => qparams.has(n));
    const isQuantStub = inner instanceof QuantStub;

    if (module && isActivationFakeQuant(qatModel, node) && node.args.length === 1) {
      const input = node.inputNodes[0]!;
      if (qparams.has(input)) {
        // absorbed into its producer, which was converted with these qparams
        node.replaceAllUsesWith(input);
        graph.eraseNode(node);
        continue;
      }
    }
    if (node.meta[FLOAT_BOUNDARY] === true && module instanceof FakeQuantize && quantizedInputs.length === 0) {
      // where a float step's output enters the quantized ops again: quantize with the observed scale
      const qp = module.calculateQparams();
      const q = place(
        node,
        nameFor(node),
        march.hooks.quantizeNode?.({ march: march.id, qparams: qp, rounding }) ?? new Quantize(qp, rounding),
      );
      qparams.set(q, qp);
      continue;
    }
    if (node.meta[FLOAT_STEP] === true && quantizedInputs.length > 0) {
      keepFloat(node, module);
      continue;
    }
    if (!isQuantStub && quantizedInputs.length === 0) {
      // float region: copy the module (the converted model must not share state with the QAT model)
      if (module) out.addSubmodule(node.target, copyOf(module));
      continue;
    }
    if (module && !(module instanceof FakeQuantize) && isPreservedAt(qatModel, node.target)) {
      preserve(node, module, quantizedInputs);
      continue;
    }

    // the activation fake-quant after this node (inserted by prepare), if any
    const users = [...node.users];
    const fqUser = users.length === 1 && isActivationFakeQuant(qatModel, users[0]!) ? users[0]! : null;
    const ctx = convertNodeContext({
      march: march.id,
      node,
      inner,
      qat,
      outputFakeQuant: fqUser ? (moduleOf(fqUser) as FakeQuantize) : null,
      catalogOp: opOfNode(out, node, inner),
      qparamsOf: (arg: Node) => qparams.get(arg) ?? null,
      rounding,
      warn: (m) => warn(`${node.name}: ${m}`),
      tableOptions: tableOptionsOf(tableOptions, node),
    });
    // a failed node still counts as quantized, so the nodes after it are checked too and every
    // failure is reported at once
    const fail = (e: UnsupportedOpError) => {
      if (hybrid) {
        runOnCpu(node, module, e, ctx.outputQparams ?? qparams.get(quantizedInputs[0]!) ?? null, fqUser);
        return;
      }
      failures.push(e);
      const qp = ctx.outputQparams ?? qparams.get(quantizedInputs[0]!);
      if (qp) qparams.set(node, qp);
    };
    let converted: ConvertedNode | undefined;
    try {
      converted = convertNode.call(march.hooks, ctx);
    } catch (e) {
      if (UnsupportedOpError.isInstance(e)) {
        fail(e);
        continue;
      }
      throw e;
    }
    if (!converted) {
      fail(
        new UnsupportedOpError({
          op: opLabel(node, inner),
          node: node.name,
          march: march.id,
          reason: 'the march has no conversion rule for it',
        }),
      );
      continue;
    }
    const created = place(
      node,
      nameFor(node),
      converted.module,
      (converted.args as typeof node.args | undefined) ?? node.args,
    );
    if (converted.outputQparams) qparams.set(created, converted.outputQparams);
  }
  if (failures.length) throw new ConversionError(march.id, failures);
  placeWrappedMethodOwners(qatModel, out);
  graph.eliminateDeadCode();
  copyTensorAttributes(qatModel, out);
  graph.validate();
  out.recompile();
  recordModelInfo(out, { kind: 'fixed-point', march: march.id });
  return out;

  /**
   * Dequantize → the QAT module (copied, VALIDATION) → quantize: with its activation fake-quant's
   * qparams (its own, or the one prepare inserted after it, which stays in between), or, for a
   * module without an output scale of its own (ReLU, pooling), its first quantized input's.
   */
  /** The node's arguments with every quantized value dequantized (a Dequantize inserted before the node). */
  function floatArgs(node: Node): { args: unknown[]; kwargs: Record<string, unknown> } {
    const dequantized = new Map<Node, Node>();
    const toFloat = (a: Node): Node => {
      if (!qparams.has(a)) return a;
      let dq = dequantized.get(a);
      if (!dq) {
        const name = out.addGeneratedSubmodule(
          'dequantize',
          march.hooks.dequantizeNode?.({ march: march.id }) ?? new Dequantize(),
        );
        dq = graph.insertingBefore(node, () => graph.callModule(name, [a]));
        dequantized.set(a, dq);
      }
      return dq;
    };
    return {
      args: node.args.map((a) => mapArg(a, toFloat)),
      kwargs: mapArg(node.kwargs, toFloat) as Record<string, unknown>,
    };
  }

  /** A quantize of `after`'s output with `qp`, in front of all its users. */
  function quantizeAfter(after: Node, qp: QParams): Node {
    const name = out.addGeneratedSubmodule(
      'quantize',
      march.hooks.quantizeNode?.({ march: march.id, qparams: qp, rounding }) ?? new Quantize(qp, rounding),
    );
    const qNode = graph.insertingAfter(after, () => graph.callModule(name, [after]));
    after.replaceAllUsesWith(qNode, { filter: (u) => u !== qNode });
    qparams.set(qNode, qp);
    return qNode;
  }

  /** A node whose qconfig is null (step-wise quantization): runs in float on dequantized inputs. */
  function keepFloat(node: Node, module: Module | null): Node {
    const { args, kwargs } = floatArgs(node);
    if (module) return place(node, node.target, copyOf(module), args, kwargs, node.method);
    node.args = args;
    node.kwargs = kwargs;
    return node;
  }

  /**
   * Heterogeneous model: a node the partition put on the BPU that the march then refuses (what only
   * calibration tells: a window too large, a per-channel input) runs in float on the CPU, and its output
   * is quantized again (its own scale, else its input's) where BPU ops read it.
   */
  function runOnCpu(
    node: Node,
    module: Module | null,
    e: UnsupportedOpError,
    qp: QParams | null,
    fqUser: Node | null,
  ): void {
    const created = keepFloat(node, module);
    const reason = e.reason || 'the march cannot convert it';
    setDeployDevice(created, 'CPU', 'conversion refused', reason);
    warn(`${node.name}: runs on the CPU, march '${march.id}' cannot convert it (${reason})`);
    if (qp) quantizeAfter(fqUser ?? created, qp);
  }

  function preserve(node: Node, module: Module, quantizedInputs: readonly Node[]): void {
    const qat = module instanceof QatModule ? module : null;
    const { args, kwargs } = floatArgs(node);
    const users = [...node.users];
    const fqUser = users.length === 1 && isActivationFakeQuant(qatModel, users[0]!) ? users[0]! : null;
    const created = place(node, node.target, copyOf(module), args, kwargs, node.method);
    const fq = qat?.activationPostProcess ?? (fqUser ? (moduleOf(fqUser) as FakeQuantize) : null);
    const qp = fq ? fq.calculateQparams() : qat ? null : (qparams.get(quantizedInputs[0]!) ?? null);
    if (!qp) return; // an "out" module: its output stays float
    quantizeAfter(fqUser ?? created, qp);
  }
}

/** The converted model starts without children; convert adds each module it needs. */
class EmptyRoot extends Module {
  forward(): never {
    throw new InvalidArgumentError('EmptyRoot has no forward');
  }
}
