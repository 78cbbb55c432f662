// Runs a QTK model and its exported ONNX file in onnxruntime-node on the same inputs and compares
// every node's value (the export's `qtk.node_values` map names each node's ONNX value).
import { QTensor } from '@qtk/fixed-point';
import type { GraphModule, Node } from '@qtk/ir';
import { Tensor } from '@qtk/tensor';
import type { CompareOptions, FloatTolerance, NodeComparison, RuntimeComparison } from '../compare-runtime.js';
import { OnnxExportError, NODE_VALUES_KEY, decodeModel, encodeModel, type ModelMsg } from '@qtk/onnx';
import type { QuantizedInput } from '../quantized-input.js';
import { mapValues, runNodes } from '@qtk/ir';

type Ort = typeof import('onnxruntime-node');

async function loadOrt(): Promise<Ort> {
  try {
    return await import('onnxruntime-node');
  } catch (e) {
    throw new OnnxExportError(
      'compareWithRuntime: onnxruntime-node is not installed; add it to your project (npm install onnxruntime-node)',
      { cause: e },
    );
  }
}

function nodeValues(model: ModelMsg): [string, string][] {
  const entry = model.metadata_props?.find((p) => p.key === NODE_VALUES_KEY);
  if (!entry?.value)
    throw new OnnxExportError(
      `compareWithRuntime: the ONNX file has no '${NODE_VALUES_KEY}' metadata; compare files written by QTK's exportOnnx`,
    );
  return JSON.parse(entry.value) as [string, string][];
}

/** The ONNX file with every mapped value added to the graph outputs (value_info gives their types). */
function withIntermediateOutputs(model: ModelMsg, values: readonly string[]): ModelMsg {
  const graph = model.graph ?? {};
  const outputs = new Set((graph.output ?? []).map((o) => o.name));
  const infos = new Map((graph.value_info ?? []).map((v) => [v.name, v]));
  const extra = values.filter((v) => !outputs.has(v) && infos.has(v)).map((v) => infos.get(v)!);
  return { ...model, graph: { ...graph, output: [...(graph.output ?? []), ...extra] } };
}

function ortInput(ort: Ort, x: QuantizedInput): InstanceType<Ort['Tensor']> {
  const t = x instanceof QTensor ? x.data : x;
  const type = t.dtype === 'float32' ? 'float32' : t.dtype === 'bool' ? 'bool' : t.dtype;
  const data = t.dtype === 'bool' ? Uint8Array.from(t.values() as Uint8Array) : t.values();
  return new ort.Tensor(type as 'float32', data as Float32Array, [...t.shape]);
}

function valuesOf(v: unknown): { data: ArrayLike<number>; shape: number[]; dtype: string } | null {
  if (v instanceof QTensor) return { data: v.ints(), shape: [...v.shape], dtype: v.dtype };
  if (v instanceof Tensor) return { data: v.values() as ArrayLike<number>, shape: [...v.shape], dtype: v.dtype };
  return null;
}

function compareValues(
  node: string,
  op: string,
  value: string,
  qtk: { data: ArrayLike<number>; shape: number[]; dtype: string },
  rt: { data: ArrayLike<number | boolean | bigint>; dims: readonly number[] },
  tolerance: FloatTolerance | null,
): NodeComparison {
  const c: NodeComparison = {
    node,
    op,
    value,
    shape: qtk.shape,
    dtype: qtk.dtype,
    elements: qtk.data.length,
    mismatches: 0,
    withinTolerance: 0,
    roundedFromFloat: 0,
    maxAbsDiff: 0,
    first: null,
  };
  if (rt.dims.length !== qtk.shape.length || rt.dims.some((d, i) => d !== qtk.shape[i])) {
    c.shapeMismatch = [...rt.dims];
    c.mismatches = c.elements;
    c.maxAbsDiff = Number.POSITIVE_INFINITY;
    return c;
  }
  const tol = tolerance && qtk.dtype === 'float32' ? tolerance : null;
  for (let i = 0; i < qtk.data.length; i++) {
    const a = qtk.data[i]!;
    const b = Number(rt.data[i]!);
    if (a === b || (Number.isNaN(a) && Number.isNaN(b))) continue;
    const d = Math.abs(a - b);
    if (!(d <= c.maxAbsDiff)) c.maxAbsDiff = d;
    if (tol && d <= tol.atol + tol.rtol * Math.abs(a)) {
      c.withinTolerance++;
      continue;
    }
    c.mismatches++;
    c.first ??= { index: i, qtk: a, runtime: b };
  }
  return c;
}

/**
 * The step of a float node's own output fake-quant (a CPU op of a hybrid model run as its QAT module), or null:
 * its float result, computed in another order by the runtime, may be fake-quantized to the neighbouring step.
 */
function outputStep(model: GraphModule, node: Node): number | null {
  if (node.op !== 'call_module') return null;
  const fq = (model.getSubmodule(node.target) as { activationPostProcess?: unknown }).activationPostProcess as
    | { calculateQparams?: () => { scale: ArrayLike<number> } }
    | null
    | undefined;
  const scale = fq?.calculateQparams?.().scale;
  return scale && scale.length === 1 && scale[0]! > 0 ? scale[0]! : null;
}

/** At most ROUNDED_SHARE of the elements differ, each by one `step` (within the float tolerance of it). */
export function isOneStepRounding(
  qtk: ArrayLike<number>,
  rt: ArrayLike<number>,
  step: number,
  tol: FloatTolerance,
): boolean {
  let differing = 0;
  for (let i = 0; i < qtk.length; i++) {
    const d = Math.abs(qtk[i]! - Number(rt[i]!));
    if (d <= tol.atol + tol.rtol * Math.abs(qtk[i]!)) continue;
    if (Math.abs(d - step) > tol.atol + tol.rtol * step + 1e-6 * step) return false;
    differing++;
  }
  return differing <= ROUNDED_SHARE * qtk.length;
}

/** The largest share of a node's elements one step off that still counts as float rounding at its fake-quant. */
const ROUNDED_SHARE = 0.01;

/**
 * Runs `model` (QTK) and `onnxBytes` (an ONNX file QTK exported from it) on the same inputs, the
 * runtime with every intermediate value added to its outputs, and compares each node's value
 * element by element. The first differing node in execution order is where to look.
 */
export async function compareWithRuntime(
  model: GraphModule,
  onnxBytes: Uint8Array,
  inputs: QuantizedInput | readonly QuantizedInput[],
  options: CompareOptions = {},
): Promise<RuntimeComparison> {
  const ort = await loadOrt();
  const list = inputs instanceof Tensor || inputs instanceof QTensor ? [inputs] : [...inputs];
  const decoded = decodeModel(onnxBytes);
  const pairs = nodeValues(decoded);
  const wanted = options.nodes ? new Set(options.nodes) : null;
  if (wanted) {
    const known = new Set(pairs.map(([n]) => n));
    const unknown = [...wanted].filter((n) => !known.has(n));
    if (unknown.length > 0)
      throw new OnnxExportError(
        `compareWithRuntime: no ONNX value for node(s) ${unknown.map((n) => `'${n}'`).join(', ')}`,
      );
  }
  const compared = pairs.filter(([n]) => !wanted || wanted.has(n));
  const session = await ort.InferenceSession.create(
    encodeModel(
      withIntermediateOutputs(
        decoded,
        compared.map(([, v]) => v),
      ),
    ),
  );
  const feeds: Record<string, InstanceType<Ort['Tensor']>> = {};
  const inputNames = (decoded.graph?.input ?? []).map((i) => i.name!);
  if (inputNames.length !== list.length)
    throw new OnnxExportError(
      `compareWithRuntime: the ONNX file takes ${inputNames.length} inputs, got ${list.length}`,
    );
  inputNames.forEach((n, i) => {
    feeds[n] = ortInput(ort, list[i]!);
  });
  let t0 = performance.now();
  const results = await session.run(feeds);
  const runtimeSeconds = (performance.now() - t0) / 1000;
  await session.release();
  const byNode = new Map(compared);
  const nodes: NodeComparison[] = [];
  const tolerance = options.floatTolerance ?? null;
  // values a tolerance accepted, replaced by the runtime's for the nodes that read them
  const replaced = new Map<Node, unknown>();
  let compareSeconds = 0;
  t0 = performance.now();
  runNodes(
    model,
    list,
    (node, value) => {
      const onnxName = byNode.get(node.name);
      const q = onnxName === undefined ? null : valuesOf(value);
      const r = onnxName === undefined ? undefined : results[onnxName];
      if (!q || !r) return;
      const t = performance.now();
      const op = node.op === 'call_module' ? model.getSubmodule(node.target).constructor.name : node.target;
      const c = compareValues(node.name, op, onnxName!, q, r as never, tolerance);
      if (tolerance && value instanceof Tensor && c.mismatches > 0 && !c.shapeMismatch) {
        const step = outputStep(model, node);
        if (step !== null && isOneStepRounding(q.data, r.data as ArrayLike<number>, step, tolerance)) {
          c.roundedFromFloat = c.mismatches;
          c.mismatches = 0;
          c.first = null;
        }
      }
      // a float value the tolerance accepted: the nodes reading it get the runtime's
      if (
        tolerance &&
        value instanceof Tensor &&
        !c.shapeMismatch &&
        c.mismatches === 0 &&
        c.withinTolerance + c.roundedFromFloat > 0
      )
        replaced.set(
          node,
          new Tensor({ data: Float32Array.from(r.data as ArrayLike<number>), shape: q.shape, dtype: 'float32' }),
        );
      nodes.push(c);
      compareSeconds += (performance.now() - t) / 1000;
    },
    {
      replaceArgs: (node, args, env) => {
        if (replaced.size === 0 || !node.inputNodes.some((n) => replaced.has(n))) return args;
        const overlay = { get: (n: Node) => (replaced.has(n) ? replaced.get(n) : env.get(n)) };
        return node.args.map((a) => mapValues(a, overlay as unknown as ReadonlyMap<Node, unknown>));
      },
    },
  );
  const qtkSeconds = (performance.now() - t0) / 1000 - compareSeconds;
  const firstDifference = nodes.find((c) => c.mismatches > 0) ?? null;
  return {
    nodes,
    firstDifference,
    identical: firstDifference === null,
    replacedFloats: replaced.size,
    seconds: { qtk: qtkSeconds, runtime: runtimeSeconds },
  };
}
