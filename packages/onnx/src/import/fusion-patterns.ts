// The decomposed activations and norms that exporters write, matched node by node so the importer can
// make them the module PyTorch had (and a march can convert): GELU from Erf (or its tanh form), LayerNorm
// from ReduceMean / Sub / Pow / ReduceMean / Add / Sqrt / Div (/ Mul / Add), SiLU from x · Sigmoid(x),
// HardSwish from x · HardSigmoid(x) and x · Relu6(x + 3) / 6. Constants must be exact up to float32
// rounding; anything else stays the decomposed ops.
import { GELU, Hardswish, LayerNorm, Parameter, SiLU, type Module } from '@qtk/nn';
import { contiguous, type Tensor } from '@qtk/tensor';
import { type GraphIndex, isConstant } from './graph-index.js';
import type { NodeMsg } from '../onnx-schema.js';

/** A matched pattern: its nodes, the value it reads and the value it produces, and the module it becomes. */
export interface PatternMatch {
  kind: 'GELU' | 'LayerNorm' | 'SiLU' | 'Hardswish';
  nodes: NodeMsg[];
  input: string;
  output: string;
  /** The module for an input of this example value, or null when the value's shape does not fit the pattern. */
  module: (x: Tensor) => Module | null;
}

// the guard names op_type so that a false result narrows nothing
const isOp = (n: NodeMsg | null | undefined, op: string): n is NodeMsg & { op_type: string } =>
  !!n && n.op_type === op && (n.domain ?? '') === '';

/** The input of binary node `n` that is not `one`, when `one` is one of its two inputs. */
function otherInput(n: NodeMsg, one: string): string | null {
  const [a, b] = n.input ?? [];
  if (n.input?.length !== 2) return null;
  return a === one ? (b ?? null) : b === one ? (a ?? null) : null;
}

/** Whether binary node `n` combines `value` with a constant equal to `c` (on either side unless `rightOnly`). */
function withConstant(g: GraphIndex, n: NodeMsg, value: string, c: number, rightOnly = false): boolean {
  if (rightOnly && n.input?.[0] !== value) return false;
  return isConstant(g.scalar(otherInput(n, value) ?? undefined), c);
}

/** Multiplies by c or divides by 1/c: x·c as PyTorch's exports write it. */
function scales(g: GraphIndex, n: NodeMsg, value: string, c: number): boolean {
  if (isOp(n, 'Mul')) return withConstant(g, n, value, c);
  return isOp(n, 'Div') && withConstant(g, n, value, 1 / c, true);
}

function floatAttr(n: NodeMsg, name: string, def: number): number {
  return (n.attribute ?? []).find((a) => a.name === name)?.f ?? def;
}

function intsAttr(n: NodeMsg, name: string): number[] | null {
  const a = (n.attribute ?? []).find((x) => x.name === name);
  return a ? (a.ints ?? []).map(Number) : null;
}

/**
 * x · ½ · (1 + core) after `core` (Erf or Tanh of something of x), in the three orders exporters write:
 * (x·(1+c))·½, (x·½)·(1+c) and x·((1+c)·½). Returns the nodes after `core` and the output.
 */
function halfXTimesOnePlus(g: GraphIndex, core: NodeMsg, x: string): { nodes: NodeMsg[]; output: string } | null {
  const add = g.soleReader(core.output?.[0]);
  const c = core.output?.[0] ?? '';
  if (!isOp(add, 'Add') || !withConstant(g, add, c, 1)) return null;
  const onePlus = add.output?.[0] ?? '';
  const m1 = g.soleReader(onePlus);
  if (!isOp(m1, 'Mul')) return null;
  const other = otherInput(m1, onePlus);
  if (other === null) return null;
  const m1out = m1.output?.[0] ?? '';
  if (other === x) {
    const m2 = g.soleReader(m1out);
    if (isOp(m2, 'Mul') && scales(g, m2, m1out, 0.5)) return { nodes: [add, m1, m2], output: m2.output?.[0] ?? '' };
    return null;
  }
  if (scales(g, m1, onePlus, 0.5)) {
    const m2 = g.soleReader(m1out);
    if (isOp(m2, 'Mul') && otherInput(m2, m1out) === x) return { nodes: [add, m1, m2], output: m2.output?.[0] ?? '' };
    return null;
  }
  const half = g.producer(other);
  if ((isOp(half, 'Mul') || isOp(half, 'Div')) && g.soleReader(other) === m1 && scales(g, half, x, 0.5))
    return { nodes: [half, add, m1], output: m1out };
  return null;
}

/** The x of `value` = Pow(x, 3) or x · (x · x) (PyTorch's export of x³), with the nodes computing it. */
function cubeOf(g: GraphIndex, value: string): { x: string; nodes: NodeMsg[] } | null {
  const p = g.producer(value);
  if (isOp(p, 'Pow')) return isConstant(g.scalar(p.input?.[1]), 3) ? { x: p.input?.[0] ?? '', nodes: [p] } : null;
  if (!isOp(p, 'Mul')) return null;
  for (const square of p.input ?? []) {
    const q = g.producer(square);
    const x = otherInput(p, square);
    if (isOp(q, 'Mul') && x && q.input?.[0] === x && q.input?.[1] === x && g.soleReader(square) === p)
      return { x, nodes: [q, p] };
  }
  return null;
}

/** GELU: ½·x·(1 + erf(x/√2)), or the tanh approximation ½·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))). */
function matchGelu(g: GraphIndex, core: NodeMsg): PatternMatch | null {
  let x: string;
  let inner: NodeMsg[];
  let approximate: 'none' | 'tanh';
  const arg = core.input?.[0] ?? '';
  if (isOp(core, 'Erf')) {
    const d = g.producer(arg);
    if (!d || g.soleReader(arg) !== core) return null;
    const candidate = d.input?.[0] ?? '';
    if (!scales(g, d, candidate, Math.SQRT1_2)) return null;
    [x, inner, approximate] = [candidate, [d], 'none'];
  } else if (isOp(core, 'Tanh')) {
    // Mul(β, Add(x, Mul(κ, Pow(x, 3))))
    const scaled = g.producer(arg);
    if (!isOp(scaled, 'Mul') || g.soleReader(arg) !== core) return null;
    const sum = (scaled.input ?? []).find((v) => withConstant(g, scaled, v, Math.sqrt(2 / Math.PI)));
    const addN = g.producer(sum ?? '');
    if (!sum || !isOp(addN, 'Add') || g.soleReader(sum) !== scaled) return null;
    const found = (addN.input ?? []).flatMap((cube) => {
      const kMul = g.producer(cube);
      const cand = otherInput(addN, cube);
      if (!isOp(kMul, 'Mul') || cand === null || g.soleReader(cube) !== addN) return [];
      const powV = (kMul.input ?? []).find((v) => withConstant(g, kMul, v, 0.044715));
      if (!powV || g.soleReader(powV) !== kMul) return [];
      const cubed = cubeOf(g, powV);
      return cubed?.x === cand ? [{ cand, nodes: [...cubed.nodes, kMul, addN, scaled] }] : [];
    })[0];
    if (!found) return null;
    [x, inner, approximate] = [found.cand, found.nodes, 'tanh'];
  } else return null;
  const tail = halfXTimesOnePlus(g, core, x);
  if (!tail) return null;
  return {
    kind: 'GELU',
    nodes: [...inner, core, ...tail.nodes],
    input: x,
    output: tail.output,
    module: () => new GELU({ approximate }),
  };
}

/** x · Sigmoid(x). */
function matchSilu(g: GraphIndex, sig: NodeMsg): PatternMatch | null {
  const x = sig.input?.[0] ?? '';
  const s = sig.output?.[0] ?? '';
  const mul = g.soleReader(s);
  if (!isOp(mul, 'Mul') || otherInput(mul, s) !== x || !x) return null;
  return { kind: 'SiLU', nodes: [sig, mul], input: x, output: mul.output?.[0] ?? '', module: () => new SiLU() };
}

/** The bounds of a Clip node, from its inputs (opset 11 on) or attributes (before). */
function clipBounds(g: GraphIndex, n: NodeMsg): [number | null, number | null] {
  const ins = n.input ?? [];
  if (ins.length > 1) return [ins[1] ? g.scalar(ins[1]) : null, ins[2] ? g.scalar(ins[2]) : null];
  return [floatAttr(n, 'min', Number.NaN), floatAttr(n, 'max', Number.NaN)];
}

/** x · HardSigmoid(x; α = 1/6, β = ½), and x · Relu6(x + 3) / 6 in either order of the product and the division. */
function matchHardSwish(g: GraphIndex, first: NodeMsg): PatternMatch | null {
  const hs = (nodes: NodeMsg[], x: string, output: string): PatternMatch => ({
    kind: 'Hardswish',
    nodes,
    input: x,
    output,
    module: () => new Hardswish(),
  });
  if (isOp(first, 'HardSigmoid')) {
    if (!isConstant(floatAttr(first, 'alpha', 0.2), 1 / 6) || !isConstant(floatAttr(first, 'beta', 0.5), 0.5))
      return null;
    const x = first.input?.[0] ?? '';
    const out = first.output?.[0] ?? '';
    const mul = g.soleReader(out);
    if (!x || !isOp(mul, 'Mul') || otherInput(mul, out) !== x) return null;
    return hs([first, mul], x, mul.output?.[0] ?? '');
  }
  if (!isOp(first, 'Add')) return null;
  const [a, b] = first.input ?? [];
  const x = isConstant(g.scalar(b), 3) ? a : isConstant(g.scalar(a), 3) ? b : undefined;
  const sum = first.output?.[0] ?? '';
  const clip = g.soleReader(sum);
  if (!x || !isOp(clip, 'Clip') || clip.input?.[0] !== sum) return null;
  const [lo, hi] = clipBounds(g, clip);
  if (lo !== 0 || hi !== 6) return null;
  const r6 = clip.output?.[0] ?? '';
  const next = g.soleReader(r6);
  if (!next) return null;
  if (isOp(next, 'Mul') && otherInput(next, r6) === x) {
    const prod = next.output?.[0] ?? '';
    const div = g.soleReader(prod);
    if (div && scales(g, div, prod, 1 / 6)) return hs([first, clip, next, div], x, div.output?.[0] ?? '');
    return null;
  }
  if (!scales(g, next, r6, 1 / 6)) return null;
  const sixth = next.output?.[0] ?? '';
  const mul = g.soleReader(sixth);
  if (!isOp(mul, 'Mul') || otherInput(mul, sixth) !== x) return null;
  return hs([first, clip, next, mul], x, mul.output?.[0] ?? '');
}

/** ReduceMean over one axis, keeping it: the axis (an attribute, or from opset 18 a constant input), or null. */
function meanAxis(g: GraphIndex, n: NodeMsg | null | undefined): number | null {
  if (!isOp(n, 'ReduceMean')) return null;
  const axesInput = g.constant(n.input?.[1]);
  const axes = axesInput ? Array.from(axesInput.values() as ArrayLike<number>, Number) : intsAttr(n, 'axes');
  const keep = (n.attribute ?? []).find((a) => a.name === 'keepdims')?.i;
  if (axes?.length !== 1 || (keep !== undefined && Number(keep) !== 1)) return null;
  return axes[0]!;
}

/** LayerNorm over the last axis: (x − mean) / √(mean((x − mean)²) + ε), then · γ + β when they follow. */
function matchLayerNorm(g: GraphIndex, r1: NodeMsg): PatternMatch | null {
  const axis = meanAxis(g, r1);
  const x = r1.input?.[0] ?? '';
  const mean = r1.output?.[0] ?? '';
  const sub = g.soleReader(mean);
  if (axis === null || !x || !isOp(sub, 'Sub') || sub.input?.[0] !== x || sub.input?.[1] !== mean) return null;
  const centred = sub.output?.[0] ?? '';
  const readers = g.readers(centred);
  if (g.isGraphOutput(centred) || readers.length !== 2) return null;
  const sq = readers.find(
    (n) =>
      (isOp(n, 'Pow') && n.input?.[0] === centred && isConstant(g.scalar(n.input?.[1]), 2)) ||
      (isOp(n, 'Mul') && n.input?.[0] === centred && n.input?.[1] === centred),
  );
  const div = readers.find((n) => isOp(n, 'Div') && n.input?.[0] === centred);
  if (!sq || !div) return null;
  const r2 = g.soleReader(sq.output?.[0]);
  if (meanAxis(g, r2) !== axis) return null;
  const addEps = g.soleReader(r2!.output?.[0]);
  const variance = r2!.output?.[0] ?? '';
  if (!isOp(addEps, 'Add')) return null;
  const eps = g.scalar(otherInput(addEps, variance) ?? undefined);
  if (eps === null || !(eps > 0)) return null;
  const sqrt = g.soleReader(addEps.output?.[0]);
  if (!isOp(sqrt, 'Sqrt') || g.soleReader(sqrt.output?.[0]) !== div || div.input?.[1] !== sqrt.output?.[0]) return null;
  const nodes = [r1, sub, sq, r2!, addEps, sqrt, div];
  let output = div.output?.[0] ?? '';
  let weight: Tensor | null = null;
  let bias: Tensor | null = null;
  const mul = g.soleReader(output);
  const w = isOp(mul, 'Mul') ? g.constant(otherInput(mul, output) ?? undefined) : null;
  if (mul && w && w.ndim === 1 && w.dtype === 'float32') {
    nodes.push(mul);
    weight = w;
    output = mul.output?.[0] ?? '';
    const add = g.soleReader(output);
    const b = isOp(add, 'Add') ? g.constant(otherInput(add, output) ?? undefined) : null;
    if (add && b && b.ndim === 1 && b.size === w.size && b.dtype === 'float32') {
      nodes.push(add);
      bias = b;
      output = add.output?.[0] ?? '';
    }
  }
  return {
    kind: 'LayerNorm',
    nodes,
    input: x,
    output,
    module: (ex) => {
      const d = ex.shape[ex.ndim - 1];
      if (ex.ndim === 0 || (axis !== -1 && axis !== ex.ndim - 1) || (weight && weight.size !== d)) return null;
      const m = new LayerNorm([d!], { eps, elementwiseAffine: weight !== null, bias: bias !== null });
      if (weight) (m as unknown as { weight: Parameter }).weight = new Parameter(contiguous(weight));
      if (bias) (m as unknown as { bias: Parameter }).bias = new Parameter(contiguous(bias));
      return m;
    },
  };
}

/** Every pattern found in the graph, each node in at most one. */
export function matchPatterns(g: GraphIndex): PatternMatch[] {
  const matches: PatternMatch[] = [];
  const taken = new Set<NodeMsg>();
  for (const n of g.graph.node ?? []) {
    if ((n.domain ?? '') !== '') continue;
    const m =
      n.op_type === 'Erf' || n.op_type === 'Tanh'
        ? matchGelu(g, n)
        : n.op_type === 'Sigmoid'
          ? matchSilu(g, n)
          : n.op_type === 'HardSigmoid' || n.op_type === 'Add'
            ? matchHardSwish(g, n)
            : n.op_type === 'ReduceMean'
              ? matchLayerNorm(g, n)
              : null;
    if (!m || m.nodes.some((k) => taken.has(k))) continue;
    // every value made inside the pattern is read only inside it
    const inside = new Set(m.nodes);
    const leaks = m.nodes.some((k) =>
      (k.output ?? []).some((o) => o !== m.output && (g.isGraphOutput(o) || g.readers(o).some((r) => !inside.has(r)))),
    );
    if (leaks) continue;
    for (const k of m.nodes) taken.add(k);
    matches.push(m);
  }
  return matches;
}
