// Two versions of a fixed-point model (before and after a retraining, a QTK upgrade, a re-export)
// run on the same inputs, op by op: which ops give other integers, by how much, which op differs
// first, which ops differ even when fed the same input values (the ops that changed themselves), and
// what changed in the structure (ops added or removed, types, scales, dtypes, weights).
import { modelFromBytes } from '@qtk/core';
import { GraphModule, Node, runNodes } from '@qtk/ir';
import { InvalidArgumentError, type Tensor } from '@qtk/tensor';
import { type ModelInputs, argsOf } from '../values/model-inputs.js';
import { callNames, nodeTypeOf } from '../values/node-type.js';
import { captureNodeValues, type NodeQuant, type NodeValue } from '../values/node-values.js';

/** A fixed-point model, or the bytes of a model file (modelToBytes / saveModelFile). */
export type ModelVersion = GraphModule | Uint8Array;

export interface OpComparison {
  /** Module path (`(i)` on repeated calls) or node name, as in both models. */
  readonly name: string;
  readonly type: string;
  /** Same shape, same quantization and the same integers (the same real values for float ops). */
  readonly identical: boolean;
  readonly elements: number;
  /** Elements that differ (null when the shapes differ). */
  readonly differing: number | null;
  /** Largest |a − b| of the integers (null for float outputs, other dtypes or shapes). */
  readonly maxIntDiff: number | null;
  /** Largest |a − b| of the real values (null when the shapes differ). */
  readonly maxRealDiff: number | null;
  /**
   * The op of `b` run on `a`'s values of its inputs (where their shape and quantization agree): the
   * difference the op makes itself, not the one it inherits. null when no input could be swapped.
   */
  readonly sameInput: { readonly differing: number | null; readonly maxIntDiff: number | null } | null;
}

export interface StructureChange {
  readonly name: string;
  readonly field: 'type' | 'shape' | 'dtype' | 'scale';
  readonly a: string | number | readonly number[];
  readonly b: string | number | readonly number[];
}

export interface ParameterChange {
  /** State-dict key. */
  readonly name: string;
  readonly status: 'changed' | 'shape' | 'only-in-a' | 'only-in-b';
  /** null unless `changed`. */
  readonly differing: number | null;
  readonly maxAbsDiff: number | null;
}

export interface ModelFilesComparison {
  readonly version: 1;
  /** The ops of `a` that `b` has too, in `a`'s execution order. */
  readonly ops: readonly OpComparison[];
  /** The first op (in execution order) whose output differs; null when every common op is identical. */
  readonly firstDifference: string | null;
  /**
   * The ops whose output differs even on `a`'s input values: the ops that changed themselves (an op
   * none of whose inputs could take `a`'s values, `sameInput` null, is not judged).
   */
  readonly changedOps: readonly string[];
  readonly identical: boolean;
  readonly onlyInA: readonly string[];
  readonly onlyInB: readonly string[];
  readonly changes: readonly StructureChange[];
  /** State-dict entries that differ, changed shape or exist in one model only. */
  readonly parameters: readonly ParameterChange[];
}

function modelOf(v: ModelVersion, which: string): GraphModule {
  if (v instanceof GraphModule) return v;
  if (v instanceof Uint8Array) return modelFromBytes(v, `compareModelFiles: model ${which}`).model;
  throw new InvalidArgumentError(
    `compareModelFiles: model ${which} must be a GraphModule or a model file's bytes (Uint8Array); read the file's bytes, or pass loadModelFileSync(path).model from @qtk/core/node`,
  );
}

/** Elements that differ and the largest difference (null when an infinity makes it unbounded). */
function maxAbs(a: ArrayLike<number>, b: ArrayLike<number>): { differing: number; max: number | null } {
  let differing = 0;
  let max = 0;
  for (let i = 0; i < a.length; i++) {
    const d = Math.abs(a[i]! - b[i]!);
    if (d !== 0 || Number.isNaN(d)) differing++;
    if (d > max) max = d;
  }
  return { differing, max: Number.isFinite(max) ? max : null };
}

const sameShape = (a: readonly number[], b: readonly number[]) =>
  a.length === b.length && a.every((d, i) => d === b[i]);
const sameScale = (a: NodeQuant | null, b: NodeQuant | null) =>
  (a?.scale.length ?? 0) === (b?.scale.length ?? 0) && (a?.scale ?? []).every((s, i) => s === b!.scale[i]);

function compareOp(
  name: string,
  type: string,
  a: NodeValue,
  b: NodeValue,
  sameInput: OpComparison['sameInput'],
): OpComparison {
  const elements = a.values.length;
  if (!sameShape(a.shape, b.shape))
    return { name, type, identical: false, elements, differing: null, maxIntDiff: null, maxRealDiff: null, sameInput };
  const real = maxAbs(a.values, b.values);
  const bothInts = a.ints !== null && b.ints !== null && a.quant?.dtype === b.quant?.dtype;
  const ints = bothInts ? maxAbs(a.ints!, b.ints!) : null;
  const differing = ints ? Math.max(ints.differing, real.differing) : real.differing;
  const sameQuant = a.quant?.dtype === b.quant?.dtype && sameScale(a.quant, b.quant);
  return {
    name,
    type,
    identical: differing === 0 && sameQuant,
    elements,
    differing,
    maxIntDiff: ints ? ints.max : null,
    maxRealDiff: real.max,
    sameInput,
  };
}

/** The element and integer differences of two outputs of one shape (null where they cannot be compared). */
function differenceOf(a: NodeValue, b: NodeValue): { differing: number | null; maxIntDiff: number | null } {
  if (!sameShape(a.shape, b.shape)) return { differing: null, maxIntDiff: null };
  const real = maxAbs(a.values, b.values);
  const ints = a.ints !== null && b.ints !== null && a.quant?.dtype === b.quant?.dtype ? maxAbs(a.ints, b.ints) : null;
  return { differing: ints ? Math.max(ints.differing, real.differing) : real.differing, maxIntDiff: ints?.max ?? null };
}

/**
 * Runs `mb` with each op fed `ma`'s values of its inputs wherever both models computed that input
 * with the same shape and quantization; returns the outputs by name and the ops that got a swap.
 */
function runOnValuesOfA(
  ma: GraphModule,
  mb: GraphModule,
  args: readonly unknown[],
  va: ReadonlyMap<string, NodeValue>,
  vb: ReadonlyMap<string, NodeValue>,
): { values: Map<string, NodeValue>; swapped: Set<string> } {
  const namesA = callNames(ma);
  const rawA = new Map<string, unknown>();
  runNodes(ma, args, (node, value) => {
    rawA.set(namesA.get(node)!, value);
  });
  const namesB = callNames(mb);
  const swapped = new Set<string>();
  const swap = (owner: string, arg: unknown, value: unknown): unknown => {
    if (Array.isArray(arg) && Array.isArray(value)) return arg.map((x, i) => swap(owner, x, value[i]));
    if (!(arg instanceof Node)) return value;
    const name = namesB.get(arg)!;
    const x = va.get(name);
    const y = vb.get(name);
    if (!x || !y || !rawA.has(name) || !sameShape(x.shape, y.shape)) return value;
    if ((x.quant?.dtype ?? 'float') !== (y.quant?.dtype ?? 'float') || !sameScale(x.quant, y.quant)) return value;
    swapped.add(owner);
    return rawA.get(name);
  };
  const replaceArgs = (node: Node, values: unknown[]) => {
    const owner = namesB.get(node)!;
    return node.args.map((a, i) => swap(owner, a, values[i]));
  };
  const out = captureNodeValues(mb, args, { replaceArgs });
  return { values: new Map([...out.values()].map((v) => [v.name, v])), swapped };
}

function parameterChanges(a: GraphModule, b: GraphModule): ParameterChange[] {
  const ta = a.stateDict().tensors;
  const tb = b.stateDict().tensors;
  const out: ParameterChange[] = [];
  const numbers = (t: Tensor) => t.values() as ArrayLike<number>;
  for (const [key, x] of Object.entries(ta)) {
    const y = tb[key];
    if (!y || !sameShape(x.shape, y.shape)) {
      out.push({ name: key, status: y ? 'shape' : 'only-in-a', differing: null, maxAbsDiff: null });
      continue;
    }
    const d = maxAbs(numbers(x), numbers(y));
    if (d.differing > 0) out.push({ name: key, status: 'changed', differing: d.differing, maxAbsDiff: d.max });
  }
  for (const key of Object.keys(tb))
    if (!(key in ta)) out.push({ name: key, status: 'only-in-b', differing: null, maxAbsDiff: null });
  return out;
}

/**
 * Runs two versions of a fixed-point model (GraphModules or model-file bytes) on `inputs` and
 * compares them op by op, matched by name: per op whether the integers are identical, how many
 * elements differ and the largest difference in integers and in real values; the same for `b`'s op
 * fed `a`'s input values, which separates the ops that changed from those that inherit a difference;
 * the first op that differs; the ops only one has; type, shape, dtype and scale changes; and the
 * weights that differ.
 */
export function compareModelFiles(a: ModelVersion, b: ModelVersion, inputs: ModelInputs): ModelFilesComparison {
  const ma = modelOf(a, 'a');
  const mb = modelOf(b, 'b');
  const args = argsOf(inputs);
  const byName = (m: GraphModule) => new Map([...captureNodeValues(m, args).values()].map((v) => [v.name, v]));
  const va = byName(ma);
  const vb = byName(mb);
  const isOp = (v: NodeValue) => v.node.op !== 'placeholder';
  const typeOf = (m: GraphModule, n: Node) => nodeTypeOf(m, n);
  const same = runOnValuesOfA(ma, mb, args, va, vb);
  const ops: OpComparison[] = [];
  const changes: StructureChange[] = [];
  for (const [name, x] of va) {
    const y = vb.get(name);
    if (!y || !isOp(x)) continue;
    const ta = typeOf(ma, x.node);
    const tb = typeOf(mb, y.node);
    if (ta !== tb) changes.push({ name, field: 'type', a: ta, b: tb });
    if (!sameShape(x.shape, y.shape)) changes.push({ name, field: 'shape', a: [...x.shape], b: [...y.shape] });
    const da = x.quant?.dtype ?? 'float';
    const db = y.quant?.dtype ?? 'float';
    if (da !== db) changes.push({ name, field: 'dtype', a: da, b: db });
    else if (!sameScale(x.quant, y.quant))
      changes.push({ name, field: 'scale', a: [...(x.quant?.scale ?? [])], b: [...(y.quant?.scale ?? [])] });
    const s = same.values.get(name);
    ops.push(compareOp(name, ta, x, y, s && same.swapped.has(name) ? differenceOf(x, s) : null));
  }
  const onlyIn = (m: Map<string, NodeValue>, other: Map<string, NodeValue>) =>
    [...m.values()].filter((v) => isOp(v) && !other.has(v.name)).map((v) => v.name);
  const first = ops.find((o) => !o.identical);
  const onlyInA = onlyIn(va, vb);
  const onlyInB = onlyIn(vb, va);
  const parameters = parameterChanges(ma, mb);
  return {
    version: 1,
    ops,
    firstDifference: first?.name ?? null,
    changedOps: ops.filter((o) => o.sameInput !== null && o.sameInput.differing !== 0).map((o) => o.name),
    identical:
      !first && onlyInA.length === 0 && onlyInB.length === 0 && changes.length === 0 && parameters.length === 0,
    onlyInA,
    onlyInB,
    changes,
    parameters,
  };
}
