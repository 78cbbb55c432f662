// Calibration's forward passes in an ONNX runtime: the prepared model (its fake-quants in CALIBRATION pass values
// through, so it computes the float model) is exported once as float ONNX with every observed value as an extra
// graph output; each batch runs in the runtime and every activation fake-quant is handed its value, in graph order,
// so its observer sees what QTK's own forward would have given it, up to the runtime's float rounding. Weight
// fake-quants observe their weights in QTK as before. A model the export or the runtime cannot run, or whose
// values on the first samples differ from QTK's, is calibrated in QTK instead, and `onFallback` says why.
import { QatModule, type CalibrationBatchRunner, weightedLayer } from '@qtk/core';
import { FakeQuantize } from '@qtk/fake-quant';
import { type GraphModule, Node, subAt } from '@qtk/ir';
import type { Module } from '@qtk/nn';
import {
  AttrType,
  DataType,
  type ExportedGraph,
  type NodeMsg,
  type OnnxRuntimeApi,
  RuntimeModel,
  type RuntimeSessionOptions,
  RuntimeRunError,
  type ValueInfoMsg,
  exportOnnxBytes,
  leadingRows,
  runtimeDifference,
} from '@qtk/onnx';
import { channelMinMax, noGrad, Tensor } from '@qtk/tensor';

export interface RuntimeCalibrationOptions {
  /** Called once when the run goes to QTK's own forward instead, with the reason. */
  onFallback?: (reason: string) => void;
  /** Called once the runtime's session is ready and checked, with how many values it hands to fake-quants. */
  onReady?: (info: { readonly values: number }) => void;
  /**
   * How far the runtime's values on the first samples may be from QTK's, relative to the larger of 1 and the
   * largest |value| of each (float kernels sum in another order, activations approximate); default 1e-4. A larger difference means the export does not compute
   * what QTK computes, and the run falls back.
   */
  checkTolerance?: number;
  /** Options of the runtime's session; default: none for onnxruntime-node, the level 'extended' for onnxruntime-web. */
  sessionOptions?: RuntimeSessionOptions;
}

/** An ONNX value the runtime computes, and the graph node whose value it is. */
interface GraphValue {
  readonly value: string;
  readonly node: string;
}

/**
 * One observation per batch: an activation's value handed to its fake-quant (`byRange` when the fake-quant takes
 * the value's range, reduced in the runtime), a weight observed in QTK, or a composite module whose fake-quants
 * observe its own steps: its forward runs in QTK on its arguments from the runtime (values, or constants as the
 * graph gives them), so they observe what QTK's forward would give them.
 */
type Observation =
  | ({ readonly kind: 'value'; readonly fq: FakeQuantize; readonly byRange: boolean } & GraphValue)
  | { readonly kind: 'weight'; readonly fq: FakeQuantize; readonly weight: Tensor }
  | {
      readonly kind: 'module';
      readonly module: Module;
      readonly args: readonly (GraphValue | { constant: unknown })[];
    };

/** The runtime values an observation reads whole (a value observed by range is read reduced). */
function wholeValues(o: Observation): GraphValue[] {
  if (o.kind === 'value') return o.byRange ? [] : [o];
  if (o.kind === 'module') return o.args.filter((a): a is GraphValue => 'value' in a);
  return [];
}

/** Every runtime value an observation reads, whole or reduced. */
function readValues(o: Observation): GraphValue[] {
  return o.kind === 'value' ? [o] : wholeValues(o);
}

/**
 * The graph outputs that reduce a value in the runtime: its smallest and largest element, its sum (NaN exactly
 * when an element is NaN or the value holds both infinities: the runtime's min and max do not leave NaN out, so a
 * NaN sum sends the run to QTK) and its shape, as float.
 */
const reducedOutputs = (value: string) =>
  ({
    min: `${value}__qtk_min`,
    max: `${value}__qtk_max`,
    sum: `${value}__qtk_sum`,
    shape: `${value}__qtk_shape`,
  }) as const;

/** Samples the check runs on: few, so the export walk and QTK's reference pass stay cheap. */
const CHECK_SAMPLES = 2;

/**
 * onnxruntime-web (its module reports `env.versions.web`) gets `graphOptimizationLevel: 'extended'`: at its default
 * level, 'all', version 1.30 cannot hand back an intermediate value its layout rewrite touched ("Reading data from
 * non-tensor typed value is not supported"), and calibration reads intermediate values.
 */
function defaultSessionOptions(ort: OnnxRuntimeApi): RuntimeSessionOptions {
  const versions = (ort as { env?: { versions?: { web?: string } } }).env?.versions;
  return versions?.web ? { graphOptimizationLevel: 'extended' } : {};
}

/**
 * A calibration engine for quantizePostTrainingAsync's `calibrationEngine` (or calibrateAsync's `runBatch`, given
 * the prepared model): the batches' forward passes run in `ort` (onnxruntime-node or onnxruntime-web).
 */
export function runtimeCalibration(
  ort: OnnxRuntimeApi,
  options: RuntimeCalibrationOptions = {},
): (prepared: GraphModule) => CalibrationBatchRunner {
  return (prepared) => {
    let engine: RuntimeEngine | 'qtk' | null = null;
    const fallBack = (reason: string): 'qtk' => {
      options.onFallback?.(reason);
      return 'qtk';
    };
    const runBatch: CalibrationBatchRunner = async (batch) => {
      const xs = Array.isArray(batch) ? batch : [batch];
      if (engine === null) {
        try {
          engine = await RuntimeEngine.create(
            ort,
            prepared,
            xs,
            options.checkTolerance ?? 1e-4,
            options.sessionOptions ?? defaultSessionOptions(ort),
          );
          options.onReady?.({ values: engine.valueCount });
        } catch (e) {
          engine = fallBack(e instanceof RuntimeCalibrationUnsupported ? e.message : `onnxruntime: ${String(e)}`);
        }
      }
      if (engine !== 'qtk') {
        try {
          await engine.observe(xs);
          return;
        } catch (e) {
          if (!(e instanceof RuntimeRunError)) throw e;
          await engine.release();
          engine = fallBack(e.message);
        }
      }
      noGrad(() => (prepared as unknown as { call(...a: Tensor[]): unknown }).call(...xs));
    };
    runBatch.release = async () => {
      if (engine instanceof RuntimeEngine) await engine.release();
      engine = null;
    };
    return runBatch;
  };
}

/** Why a model is calibrated in QTK instead (a message for the user). */
class RuntimeCalibrationUnsupported extends Error {}

class RuntimeEngine {
  /**
   * Each observed value's shape per batch row: `scales[i]` when dim i grows with the batch (perRow[i] per row: the
   * batch may be on any axis, or folded with another dim, as attention heads are), else the dim is perRow[i]. Learnt
   * from the runtime's shapes on one row and on the example's rows.
   */
  private readonly shapes = new Map<string, { perRow: readonly number[]; scales: readonly boolean[] }>();
  /** What a batch fetches: the values observed whole, and the reduced outputs of those observed by range. */
  private readonly fetches: string[];

  private constructor(
    private readonly runtime: RuntimeModel,
    private readonly observations: readonly Observation[],
  ) {
    const fetches = new Set<string>();
    for (const o of observations) {
      if (o.kind === 'value' && o.byRange && !runtime.inputNames.includes(o.value))
        for (const name of Object.values(reducedOutputs(o.value))) fetches.add(name);
      for (const { value } of wholeValues(o)) if (!runtime.inputNames.includes(value)) fetches.add(value);
    }
    this.fetches = [...fetches];
  }

  get valueCount(): number {
    return new Set(this.observations.flatMap((o) => readValues(o).map((v) => v.value))).size;
  }

  static async create(
    ort: OnnxRuntimeApi,
    gm: GraphModule,
    first: readonly Tensor[],
    tolerance: number,
    sessionOptions: RuntimeSessionOptions = {},
  ): Promise<RuntimeEngine> {
    const example = first.map((x) => leadingRows(x, CHECK_SAMPLES));
    const { bytes, observations, qtkValues } = withoutObserving(gm, () => exportObserved(gm, example));
    let runtime: RuntimeModel;
    try {
      runtime = await RuntimeModel.create(ort, bytes, sessionOptions);
    } catch (e) {
      throw new RuntimeCalibrationUnsupported((e as Error).message);
    }
    const engine = new RuntimeEngine(runtime, observations);
    try {
      await engine.check(qtkValues, example, tolerance);
    } catch (e) {
      await engine.release();
      throw e;
    }
    return engine;
  }

  /**
   * Runs one batch in the runtime and hands every fake-quant its value (or its value's range). Throws
   * RuntimeRunError, before any fake-quant has observed the batch, when a shape or a reduced value is not as it
   * should be.
   */
  async observe(xs: readonly Tensor[]): Promise<void> {
    const values = await this.run(xs, this.fetches);
    const rows = xs[0]?.shape[0];
    for (const [name, shape] of this.shapes) {
      const whole = values.get(name);
      const got = whole ? whole.shape : Array.from(values.get(reducedOutputs(name).shape)!.values());
      const want = shape.perRow.map((d, i) => (shape.scales[i] ? d * rows! : d));
      if (got.join() !== want.join())
        throw new RuntimeRunError(
          `onnxruntime gave '${name}' the shape [${got.join(', ')}] on a batch of ${rows}, not [${want.join(', ')}]`,
        );
      if (!whole && Number.isNaN(values.get(reducedOutputs(name).sum)!.values()[0]))
        throw new RuntimeRunError(
          `'${name}' holds NaN (or both infinities) on this batch, whose range only QTK's forward finds`,
        );
    }
    noGrad(() => {
      for (const o of this.observations) {
        if (o.kind === 'weight') o.fq.call(o.weight);
        else if (o.kind === 'module')
          o.module.call(...o.args.map((a) => ('value' in a ? values.get(a.value)! : a.constant)));
        else if (o.byRange && values.has(reducedOutputs(o.value).min)) {
          const r = reducedOutputs(o.value);
          o.fq.observeRange(values.get(r.min)!.values()[0]!, values.get(r.max)!.values()[0]!);
        } else o.fq.call(values.get(o.value)!);
      }
    });
  }

  async release(): Promise<void> {
    await this.runtime.release();
  }

  /** The runtime's outputs of a batch and the inputs themselves (a fake-quant may observe a graph input). */
  private async run(xs: readonly Tensor[], fetches?: readonly string[]): Promise<Map<string, Tensor>> {
    const values = await this.runtime.run(xs, fetches);
    xs.forEach((x, i) => {
      values.set(this.runtime.inputNames[i]!, x);
    });
    return values;
  }

  /** The runtime's values on the example against QTK's own (the export walk's) on it; throws when one differs. */
  private async check(qtk: ReadonlyMap<string, unknown>, example: readonly Tensor[], tolerance: number): Promise<void> {
    const rows = example[0]?.shape[0] ?? 1;
    let runtime: Map<string, Tensor>;
    let oneRow: Map<string, Tensor>;
    try {
      runtime = await this.run(example);
      oneRow = rows > 1 ? await this.run(example.map((x) => leadingRows(x, 1))) : runtime;
    } catch (e) {
      throw new RuntimeCalibrationUnsupported((e as Error).message);
    }
    for (const o of this.observations.flatMap(readValues)) {
      const value = qtk.get(o.node);
      const mine = value instanceof Tensor ? value : undefined;
      const theirs = runtime.get(o.value);
      const why = mine && theirs ? runtimeDifference(mine, theirs, tolerance) : 'not computed';
      if (why)
        throw new RuntimeCalibrationUnsupported(
          `onnxruntime's value of '${o.node}' differs from QTK's on the first samples (${why})`,
        );
      const reduced = reducedOutputs(o.value);
      if (runtime.has(reduced.min)) {
        const [lo, hi] = rangeOf(theirs!);
        const [rlo, rhi] = [runtime.get(reduced.min)!.values()[0], runtime.get(reduced.max)!.values()[0]];
        if (lo <= hi && (rlo !== lo || rhi !== hi))
          throw new RuntimeCalibrationUnsupported(
            `onnxruntime's range of '${o.node}' is [${rlo}, ${rhi}], not its value's [${lo}, ${hi}]`,
          );
      }
      this.shapes.set(o.value, shapePerRow(o.node, mine!.shape, oneRow.get(o.value)!.shape, rows));
    }
  }
}

/**
 * How a value's shape follows the batch, from its shape on `rows` rows and on one: a dim equal in both is fixed, a
 * dim `rows` times larger grows with the batch. Anything else means the graph does not compute per sample.
 */
function shapePerRow(
  node: string,
  shape: readonly number[],
  one: readonly number[],
  rows: number,
): { perRow: readonly number[]; scales: readonly boolean[] } {
  const scales = shape.map((d, i) => rows > 1 && d !== one[i]);
  if (one.length !== shape.length || shape.some((d, i) => scales[i] && d !== one[i]! * rows))
    throw new RuntimeCalibrationUnsupported(
      `onnxruntime's value of '${node}' has the shape [${one.join(', ')}] on one sample and [${shape.join(', ')}] on ${rows}: it does not follow the batch`,
    );
  return { perRow: one, scales };
}

/** The smallest and largest element, NaN left out (lo > hi when every element is NaN). */
function rangeOf(x: Tensor): [number, number] {
  const [lo, hi] = [new Float64Array(1), new Float64Array(1)];
  channelMinMax(x.values() as Float32Array, { outer: 1, channels: 1, inner: x.size }, lo, hi);
  return [lo[0]!, hi[0]!];
}

/**
 * Runs `f` with every fake-quant of `gm` passing values through without observing (the export walk and the check
 * run the model on the example; the calibration must not see those samples twice).
 */
function withoutObserving<T>(gm: GraphModule, f: () => T): T {
  const fqs = gm.modules().filter((m): m is FakeQuantize => m instanceof FakeQuantize);
  for (const fq of fqs) Object.defineProperty(fq, 'forward', { value: (x: Tensor) => x, configurable: true });
  try {
    return f();
  } finally {
    for (const fq of fqs) delete (fq as unknown as { forward?: unknown }).forward;
  }
}

/**
 * The model's float ONNX with every value a fake-quant observes as a graph output (and the reductions of those
 * observed by range), the observations of one batch in graph order, and QTK's value of every node on the example
 * (the export walk's forward). Throws RuntimeCalibrationUnsupported for a fake-quant the export cannot reach (one
 * inside a composite module, observing a step of it).
 */
function exportObserved(
  gm: GraphModule,
  example: readonly Tensor[],
): { bytes: Uint8Array; observations: Observation[]; qtkValues: ReadonlyMap<string, unknown> } {
  let qtkValues: ReadonlyMap<string, unknown> = new Map();
  let observations: Observation[] = [];
  try {
    const bytes = exportOnnxBytes(gm, example, {
      onNodeValues: (v) => {
        qtkValues = v;
      },
      addOutputs: (graph) => {
        observations = observationsOf(gm, graph);
        return observedOutputs(observations, graph);
      },
    });
    return { bytes, observations, qtkValues };
  } catch (e) {
    if (e instanceof RuntimeCalibrationUnsupported) throw e;
    throw new RuntimeCalibrationUnsupported(`the model cannot be exported to ONNX: ${(e as Error).message}`);
  }
}

/**
 * One batch's observations in graph order, each value named as the export named it. Throws
 * RuntimeCalibrationUnsupported for a fake-quant the export cannot reach.
 */
function observationsOf(gm: GraphModule, graph: ExportedGraph): Observation[] {
  const observations: Observation[] = [];
  const reached = new Set<FakeQuantize>();
  const runtimeValueOf = (node: Node) =>
    node.op === 'placeholder' ? graph.inputs[gm.graph.placeholders.indexOf(node)] : graph.valueOf.get(node.name);
  const observeValue = (fq: FakeQuantize, node: Node) => {
    const value = runtimeValueOf(node);
    if (value === undefined) return;
    observations.push({ kind: 'value', fq, value, node: node.name, byRange: fq.observesRange });
    reached.add(fq);
  };
  /** A composite module's own fake-quants observe its steps: its forward runs in QTK on its runtime arguments. */
  const observeSteps = (inner: Module, node: Node) => {
    const own = inner.modules().filter((f): f is FakeQuantize => f instanceof FakeQuantize && !reached.has(f));
    if (own.length === 0 || Object.keys(node.kwargs).length > 0) return;
    const args: (GraphValue | { constant: unknown })[] = [];
    for (const a of node.args) {
      if (!(a instanceof Node)) args.push({ constant: a });
      else {
        const value = runtimeValueOf(a);
        if (value === undefined) return;
        args.push({ value, node: a.name });
      }
    }
    observations.push({ kind: 'module', module: inner, args });
    for (const f of own) reached.add(f);
  };
  const called: Module[] = [];
  for (const node of gm.graph.nodes) {
    if (node.op !== 'call_module' || node.method !== undefined) continue;
    const m = subAt(gm, node.target);
    called.push(m);
    if (m instanceof FakeQuantize) {
      observeValue(m, node);
      continue;
    }
    if (!(m instanceof QatModule)) {
      observeSteps(m, node);
      continue;
    }
    const layer = m.weightFakeQuant ? weightedLayer(m.module) : null;
    if (layer && m.weightFakeQuant) {
      observations.push({ kind: 'weight', fq: m.weightFakeQuant, weight: layer.layer.weight });
      reached.add(m.weightFakeQuant);
    }
    observeSteps(m.module, node);
    if (m.activationPostProcess) observeValue(m.activationPostProcess, node);
  }
  const unreached = gm
    .namedModules()
    .find(([, m]) => m instanceof FakeQuantize && !reached.has(m) && called.some((c) => c.modules().includes(m)));
  if (unreached)
    throw new RuntimeCalibrationUnsupported(
      `fake-quant '${unreached[0]}' observes a value inside its module, which the ONNX export does not expose`,
    );
  return observations;
}

/** The graph outputs the observations read: the values read whole, and the reductions of those read by range. */
function observedOutputs(
  observations: readonly Observation[],
  graph: ExportedGraph,
): { nodes: NodeMsg[]; outputs: ValueInfoMsg[] } {
  const outputs = new Set(graph.outputs);
  const observed = [...new Set(observations.flatMap((o) => readValues(o).map((v) => v.value)))].filter(
    (v) => !graph.inputs.includes(v),
  );
  const extra = observed.filter((v) => !outputs.has(v)).map((v) => graph.valueInfo.get(v) ?? { name: v });
  const byRange = new Set(observations.flatMap((o) => (o.kind === 'value' && o.byRange ? [o.value] : [])));
  const reductions = reductionNodes(observed.filter((v) => byRange.has(v)));
  return { nodes: reductions.nodes, outputs: [...extra, ...reductions.outputs] };
}

/** The nodes and graph outputs of reducedOutputs for each value (all axes reduced; opsets 11 to 21). */
function reductionNodes(values: readonly string[]): { nodes: NodeMsg[]; outputs: ValueInfoMsg[] } {
  const keepdims = { name: 'keepdims', type: AttrType.INT, i: 0 };
  const nodes: NodeMsg[] = [];
  const outputs: ValueInfoMsg[] = [];
  for (const v of values) {
    const r = reducedOutputs(v);
    for (const [op, out] of [
      ['ReduceMin', r.min],
      ['ReduceMax', r.max],
      ['ReduceSum', r.sum],
    ] as const)
      nodes.push({ op_type: op, input: [v], output: [out], name: out, attribute: [keepdims] });
    const shape = `${r.shape}_i64`;
    nodes.push({ op_type: 'Shape', input: [v], output: [shape], name: shape });
    nodes.push({
      op_type: 'Cast',
      input: [shape],
      output: [r.shape],
      name: r.shape,
      attribute: [{ name: 'to', type: AttrType.INT, i: DataType.FLOAT }],
    });
    outputs.push(...Object.values(r).map((name) => ({ name })));
  }
  return { nodes, outputs };
}
