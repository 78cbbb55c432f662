// The value every node of a model computes for one input, as float32 numbers with the quantization
// (scale, dtype, range) that produced it: the common currency of the profiler's tools.
import { FakeQuantize } from '@qtk/fake-quant';
import type { FakeQuantState } from '@qtk/spec';
import { intRange, QTensor, Quantize } from '@qtk/fixed-point';
import { type GraphModule, type Node, runNodes, subAt } from '@qtk/ir';
import type { QuantDType } from '@qtk/spec';
import { callNames } from './node-type.js';
import { Tensor } from '@qtk/tensor';

/** The quantization of a node's output: its scale(s), integer type and range. */
export interface NodeQuant {
  /** One scale per tensor, or one per channel along `axis`. */
  readonly scale: readonly number[];
  readonly axis: number;
  readonly dtype: QuantDType | 'qbool';
  readonly quantMin: number;
  readonly quantMax: number;
  /** 'fake-quant': the node's own fake-quant (or the one right after it); 'fixed': the QTensor it returned; 'inherited': passed through from its input. */
  readonly source: 'fake-quant' | 'fixed' | 'inherited';
}

/** One node's output for the profiled input. */
export interface NodeValue {
  readonly node: Node;
  /** Module path of a module call, else the node name; `(i)` marks the i-th repeated call of a shared module. */
  readonly name: string;
  readonly shape: readonly number[];
  /** The real values (a fixed-point output dequantized). */
  readonly values: Float32Array;
  /** The integers of a fixed-point output (null for float outputs). */
  readonly ints: ArrayLike<number> | null;
  readonly quant: NodeQuant | null;
  /**
   * The real values before the node's quantization clamped them (what its output fake-quant or the
   * fixed-point Quantize received), when the profiler saw them; null otherwise.
   */
  readonly preQuant?: Float32Array | null;
}

export const nodeNameOf = (n: Node): string => (n.op === 'call_module' ? n.target : n.name);

/** The fake-quant that quantizes a module's output, if it has one (a QAT module's activation fake-quant, or the module itself). */
export function outputFakeQuantOf(module: unknown): FakeQuantize | null {
  if (module instanceof FakeQuantize) return module;
  const post = (module as { activationPostProcess?: unknown } | null)?.activationPostProcess;
  return post instanceof FakeQuantize ? post : null;
}

function quantOfFakeQuant(fq: FakeQuantize): NodeQuant {
  const q = fq.calculateQparams();
  return {
    scale: Array.from(q.scale),
    axis: q.scale.length > 1 ? q.chAxis : -1,
    dtype: q.dtype,
    quantMin: q.quantMin,
    quantMax: q.quantMax,
    source: 'fake-quant',
  };
}

function quantOfQTensor(q: QTensor): NodeQuant {
  const { min: quantMin, max: quantMax } = intRange(q.dtype);
  return { scale: Array.from(q.scale), axis: q.axis, dtype: q.dtype, quantMin, quantMax, source: 'fixed' };
}

/** Ops whose output keeps its input's quantization (shape changes, stubs on a fixed-scale path). */
const PASS_THROUGH = new Set(['Flatten', 'Identity', 'Dropout', 'flatten', 'reshape', 'view', 'permute', 'transpose']);

function passesQuantThrough(gm: GraphModule, node: Node): boolean {
  if (node.op === 'call_module') return PASS_THROUGH.has(subAt(gm, node.target).constructor.name);
  return (node.op === 'call_method' || node.op === 'call_function') && PASS_THROUGH.has(node.target);
}

/** The real values of a Tensor or QTensor as float32, or null for anything else. */
export function realValues(
  v: unknown,
): { values: Float32Array; ints: ArrayLike<number> | null; shape: number[] } | null {
  if (v instanceof QTensor) {
    const d = v.dequantize();
    return { values: d.values() as Float32Array, ints: v.ints(), shape: [...v.shape] };
  }
  if (v instanceof Tensor) {
    return { values: Float32Array.from(v.values()), ints: null, shape: [...v.shape] };
  }
  return null;
}

/**
 * Sets every fake-quant of `model` to VALIDATION (quantize with the scale it has; a calibrating or QAT-state one
 * would otherwise observe the profiled input and move its scale) and returns the undo.
 */
export function validatingFakeQuants(model: GraphModule): () => void {
  const saved: [FakeQuantize, FakeQuantState][] = [];
  for (const m of model.modules()) {
    if (!(m instanceof FakeQuantize)) continue;
    saved.push([m, m.fakeQuantState]);
    m.setFakeQuantState('VALIDATION');
  }
  return () => {
    for (const [m, s] of saved) m.setFakeQuantState(s);
  };
}

export interface CaptureOptions {
  /** Feed a node other argument values (see runNodes' replaceArgs). */
  readonly replaceArgs?: (node: Node, args: unknown[], env: ReadonlyMap<Node, unknown>) => unknown[];
}

/**
 * Runs `gm` on `inputs` and returns the value of every node whose output is a tensor (placeholders,
 * module / function / method calls), in execution order, keyed by node. Fake-quants run as in VALIDATION
 * whatever their state (the model's scales and states are left as they were).
 */
export function captureNodeValues(
  gm: GraphModule,
  inputs: readonly unknown[],
  options: CaptureOptions = {},
): Map<Node, NodeValue> {
  const out = new Map<Node, NodeValue>();
  const names = callNames(gm);
  const restore = validatingFakeQuants(gm);
  const fakeQuantInputs = recordFakeQuantInputs(gm);
  try {
    runNodes(
      gm,
      inputs,
      (node, value, args) => {
        if (node.op === 'output' || node.op === 'get_attr') return;
        const real = realValues(value);
        if (!real) return;
        let quant: NodeQuant | null = null;
        let preQuant: Float32Array | null = null;
        const module = node.op === 'call_module' ? subAt(gm, node.target) : null;
        if (value instanceof QTensor) {
          quant = quantOfQTensor(value);
          if (module instanceof Quantize && args[0] instanceof Tensor) preQuant = Float32Array.from(args[0].values());
        } else if (module) {
          const fq = outputFakeQuantOf(module);
          if (fq) {
            quant = quantOfFakeQuant(fq);
            preQuant = fakeQuantInputs.take(fq);
          }
        }
        if (!quant && passesQuantThrough(gm, node)) {
          const input = node.args[0];
          const producer =
            input && typeof input === 'object' && 'op' in (input as object) ? out.get(input as Node) : undefined;
          if (producer?.quant) {
            quant = { ...producer.quant, source: 'inherited' };
            // a shape change keeps the values, so with one scale their saturation too
            if (producer.quant.scale.length === 1) preQuant = producer.preQuant ?? null;
          }
        }
        out.set(node, {
          node,
          name: names.get(node) ?? nodeNameOf(node),
          shape: real.shape,
          values: real.values,
          ints: real.ints,
          quant,
          preQuant,
        });
      },
      options.replaceArgs ? { replaceArgs: options.replaceArgs } : {},
    );
  } finally {
    fakeQuantInputs.restore();
    restore();
  }
  return out;
}

/** Records what each fake-quant of `gm` is called with (its last input), until `restore`. */
function recordFakeQuantInputs(gm: GraphModule): {
  take(fq: FakeQuantize): Float32Array | null;
  restore(): void;
} {
  const last = new Map<FakeQuantize, Float32Array>();
  const patched: FakeQuantize[] = [];
  for (const m of gm.modules()) {
    if (!(m instanceof FakeQuantize) || Object.hasOwn(m, 'forward')) continue;
    const forward = m.forward;
    m.forward = function (this: FakeQuantize, x: Tensor) {
      last.set(this, Float32Array.from(x.values()));
      return forward.call(this, x);
    };
    patched.push(m);
  }
  return {
    take(fq) {
      const v = last.get(fq) ?? null;
      last.delete(fq);
      return v;
    },
    restore() {
      for (const m of patched) delete (m as { forward?: unknown }).forward;
    },
  };
}

/** The scale applying to element `i` of a tensor of `shape` (per tensor, or per channel along q.axis). */
export function scaleAt(
  q: { readonly scale: ArrayLike<number>; readonly axis: number },
  shape: readonly number[],
): (i: number) => number {
  if (q.axis < 0 || q.scale.length === 1) {
    const s = q.scale[0]!;
    return () => s;
  }
  let inner = 1;
  for (let d = q.axis + 1; d < shape.length; d++) inner *= shape[d]!;
  const c = q.scale.length;
  return (i) => q.scale[Math.floor(i / inner) % c]!;
}
