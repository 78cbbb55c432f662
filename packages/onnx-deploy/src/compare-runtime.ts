// What compareWithRuntime (@qtk/onnx-deploy/node) finds when it runs a QTK model and its exported ONNX file
// in onnxruntime-node on the same inputs, node by node, and its one-line summary.
import type { GraphModule } from '@qtk/ir';
import type { QuantizedInput } from './quantized-input.js';

/** How one node's value compares. */
export interface NodeComparison {
  /** QTK node name. */
  node: string;
  /** What ran: the module class (call_module) or the function / method name. */
  op: string;
  /** ONNX value name. */
  value: string;
  shape: number[];
  dtype: string;
  elements: number;
  /** Elements whose values differ (any bit, NaN equals NaN; for float values, by more than the floatTolerance). */
  mismatches: number;
  /** Float elements that differ, but within the floatTolerance (0 without one). */
  withinTolerance: number;
  /**
   * Float elements exactly one step of the node's own output fake-quant off (a CPU op of a hybrid model: the
   * runtime's float kernel, summing in another order, put the value on the other side of a step), at most 1 % of
   * the node's elements. Not mismatches, with a floatTolerance: the nodes reading it get the runtime's value.
   */
  roundedFromFloat: number;
  /** Largest |qtk − runtime| over the differing elements, tolerated ones included (in integer steps for quantized values). */
  maxAbsDiff: number;
  /** The first differing element: flat index, QTK's value and the runtime's. */
  first: { index: number; qtk: number; runtime: number } | null;
  /** Set when the runtime's value has another shape than QTK's. */
  shapeMismatch?: number[];
}

export interface RuntimeComparison {
  /** Every compared node, in execution order. */
  nodes: NodeComparison[];
  /** The first node in execution order whose value differs, or null. */
  firstDifference: NodeComparison | null;
  /** Whether every compared value is identical (floats within the tolerance, on the runtime's inputs). */
  identical: boolean;
  /** Float values that differed within the tolerance, whose readers were fed the runtime's value instead. */
  replacedFloats: number;
  /** Seconds spent by QTK and by the runtime on the forward pass. */
  seconds: { qtk: number; runtime: number };
}

export interface CompareOptions {
  /** Compare only these nodes (default: every node the export mapped). */
  nodes?: readonly string[];
  /**
   * Float values (the CPU ops of a heterogeneous model, dequantized outputs) that differ by at most
   * `atol + rtol · |qtk|` count as equal: a runtime's float kernels may round in another order. Integer values
   * (quantized tensors) are always compared exactly. Wherever a float value differed within the tolerance, the
   * nodes reading it are fed the runtime's value (`replacedFloats`), so a float difference is not compounded and
   * every node is checked on the inputs the runtime gave it: a quantize of a CPU op's output agrees bit for bit
   * although, end to end, the two float values may have rounded to neighbouring steps. Default: none, every value
   * bit for bit.
   */
  floatTolerance?: FloatTolerance;
}

export interface FloatTolerance {
  readonly rtol: number;
  readonly atol: number;
}

/**
 * Runs a QTK model and the ONNX bytes QTK exported from it in an ONNX runtime and compares every node's
 * value: compareWithRuntime of @qtk/onnx-deploy/node (onnxruntime-node) is one. Code that runs anywhere takes
 * one as an argument instead of importing a runtime.
 */
export type RuntimeComparer = (
  model: GraphModule,
  onnxBytes: Uint8Array,
  inputs: QuantizedInput | readonly QuantizedInput[],
  options?: CompareOptions,
) => Promise<RuntimeComparison>;

/** One line per differing node (or a line saying all are identical), for logs and the CLI. */
export function formatRuntimeComparison(c: RuntimeComparison): string {
  if (c.identical) return `all ${c.nodes.length} compared values identical`;
  const d = c.firstDifference!;
  const where = d.shapeMismatch
    ? `shape [${d.shape}] in QTK, [${d.shapeMismatch}] in the runtime`
    : `${d.mismatches} of ${d.elements} elements differ, max |diff| ${d.maxAbsDiff}, first at index ${d.first!.index} (QTK ${d.first!.qtk}, runtime ${d.first!.runtime})`;
  return `first difference at node '${d.node}' (${d.op}, ONNX value '${d.value}'): ${where}`;
}
