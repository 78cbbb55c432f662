// ONNX operators that become call_function nodes (or fold away when all their inputs are constant).
import { init, Linear, Parameter } from '@qtk/nn';
import {
  Tensor,
  abs,
  add,
  cat,
  contiguous,
  div,
  exp,
  log,
  matmul,
  mul,
  neg,
  pow,
  reciprocal,
  split,
  sqrt,
  sub,
  transpose,
} from '@qtk/tensor';
import { Unsupported, qtkDType, type NodeContext, type Val } from './context.js';
import { COMPUTED_TYPES, onnxTypeName } from '../onnx-schema.js';
import type { Handler } from './layers.js';
import { binary, unary } from './call-handlers.js';
import {
  onnxCast,
  onnxOnesMask,
  onnxGather,
  onnxPad,
  onnxReshape,
  onnxSlice,
  onnxSqueeze,
  onnxTranspose,
  onnxUnsqueeze,
} from './functions.js';
import { constToTensor } from '../tensor-proto.js';
import { batchOf, fixedBatch, markArithmetic, marked } from './shape-vectors.js';
import { ImportLimits, broadcastShape } from './limits.js';
import { OnnxFormatError } from '../errors.js';

const I32_MAX = 2147483647;
const clampI32 = (v: number) => Math.max(-I32_MAX - 1, Math.min(I32_MAX, v));

function intConst(values: number[], shape: number[] = [values.length], sym?: (number | null)[]): Val {
  const t = new Tensor({ data: Int32Array.from(values.map(clampI32)), shape, dtype: 'int32' });
  return sym ? { kind: 'const', t, sym } : { kind: 'const', t };
}

/** Add / Sub / Mul / Div, which keep a shape vector's batch entries symbolic (`bsz * num_heads`). */
const arithmetic =
  (fn: (a: Tensor, b: Tensor) => Tensor): Handler =>
  (ctx) => {
    const [out] = binary(fn)(ctx) as [Val];
    return [markArithmetic(ctx.input(0), ctx.input(1), out)];
  };

/** Axes from the attribute (older opsets) or the second input (newer). */
export function axesOf(ctx: NodeContext, inputFrom: number): number[] | null {
  return ctx.opset >= inputFrom ? ctx.constInts(1, 'axes') : ctx.ints('axes');
}

const matmulOp: Handler = (ctx) => {
  const b = ctx.ex(1);
  const a = ctx.ex(0);
  const linear = ctx.isConst(1) && !ctx.isConst(0) && b.ndim === 2 && a.ndim >= 2;
  if (linear) {
    // a Linear runs on the rows of a: the constant weight is never broadcast over a's leading dims
    ctx.limit([...a.shape.slice(0, -1), b.shape[1]!]);
    ctx.work(ImportLimits.count([...a.shape, b.shape[1]!]));
  } else if (a.ndim >= 2 && b.ndim >= 2) {
    const batch = broadcastShape(a.shape.slice(0, -2), b.shape.slice(0, -2));
    if (batch) {
      ctx.limit([...batch, a.shape[a.ndim - 2]!, b.shape[b.ndim - 1]!]);
      ctx.limit([...batch, a.shape[a.ndim - 2]!, a.shape[a.ndim - 1]!], 'a broadcast operand');
      ctx.limit([...batch, b.shape[b.ndim - 2]!, b.shape[b.ndim - 1]!], 'a broadcast operand');
      ctx.work(ImportLimits.count([...batch, a.shape[a.ndim - 2]!, a.shape[a.ndim - 1]!, b.shape[b.ndim - 1]!]));
    }
  }
  if (linear) {
    const m = init.skipInit(() => new Linear(b.shape[0]!, b.shape[1]!, { bias: false }));
    (m as unknown as { weight: Parameter }).weight = new Parameter(contiguous(transpose(b, 0, 1)));
    const bias = ctx.imp.fusedBias.get(ctx.node);
    if (bias) {
      m.bias = new Parameter(contiguous(bias));
    } else (m as unknown as { bias: null }).bias = null;
    return [ctx.module(m, [ctx.input(0)])];
  }
  const y = ctx.fn(matmul, [ctx.input(0), ctx.input(1)]);
  const fused = ctx.imp.fusedBias.get(ctx.node);
  return [fused ? ctx.fn(add, [y, { kind: 'const', t: fused }], '_bias') : y];
};

const reshapeOp: Handler = (ctx) => {
  const allowZero = ctx.int('allowzero', 0) === 1;
  const v = ctx.input(1);
  if (v.kind !== 'const')
    throw new Unsupported('the target shape must be a constant (initializer or foldable subgraph)');
  const x = ctx.input(0);
  if (x.kind === 'const' && x.sym) {
    // a shape vector reshaped (to [-1] or a scalar): its entries, and their marks, keep their order
    const out = ctx.fn(onnxReshape, allowZero ? [x, [...v.t.values()], true] : [x, [...v.t.values()]]);
    return [out.kind === 'const' && out.t.ndim <= 1 ? marked(out, x.sym, [x]) : out];
  }
  let shape = Array.from(v.t.values() as ArrayLike<number>, Number);
  if (v.sym) {
    // A shape computed from a dynamic batch: keep the batch entry symbolic. A single dynamic entry is
    // inferred (-1), which holds when the input's first dim is not the batch (Swin's windows are [B·nW, ...]);
    // otherwise 0 copies the input's first dim.
    const sym = v.sym;
    const single = sym.filter((d) => d === null).length === 1 && !sym.includes(-1);
    shape = sym.map((d, i) => (d !== null ? d : single ? -1 : i === 0 ? 0 : -1));
  }
  return [ctx.fn(onnxReshape, allowZero ? [ctx.input(0), shape, true] : [ctx.input(0), shape])];
};

const shapeOp: Handler = (ctx) => {
  const x = ctx.input(0);
  const ex = ctx.ex(0);
  let dims = [...ex.shape];
  const start = ctx.int('start', 0);
  const end = ctx.int('end', dims.length);
  const norm = (i: number) => Math.max(0, Math.min(dims.length, i < 0 ? i + dims.length : i));
  const free = x.kind === 'dyn' && x.dynBatch;
  // the dims that change when the graph runs one sample longer; the first dim when the probe cannot run
  const probed = free ? ctx.imp.probe.shapeOf(x.node) : null;
  const moved = probed && probed.length === dims.length ? probed : null;
  if (free && !moved && ctx.imp.probe.firstMiss()) {
    ctx.imp.warn(
      `importOnnx: ${ctx.opType} '${ctx.name}': the import could not tell which dims of its input follow the batch (running the graph one sample longer failed or went over maxElements) and takes the first; if the model fails or differs at another batch, import it at the batch it will run at (inputShapes, or the CLI's --input-shape)`,
    );
  }
  const sym: (number | null)[] = dims.map((d, i) => ((moved ? moved[i] !== d : i === 0 && free) ? null : d));
  dims = dims.slice(norm(start), norm(end));
  const s = sym.slice(norm(start), norm(end));
  const axis = sym.indexOf(null);
  const out = intConst(dims, [dims.length]);
  if (!s.includes(null) || x.kind !== 'dyn') return [out];
  return [{ ...out, sym: s, batch: { node: x.node, ex: x.ex, axis, size: ex.shape[axis]! } }];
};

const gatherOp: Handler = (ctx) => {
  const x = ctx.input(0);
  const axis = ctx.int('axis', 0);
  const idx = ctx.input(1);
  const xs = ctx.ex(0).shape;
  const a = axis < 0 ? axis + xs.length : axis;
  ctx.limit([...xs.slice(0, a), ...ctx.ex(1).shape, ...xs.slice(a + 1)]);
  if (x.kind === 'const' && x.sym && idx.kind === 'const' && axis === 0) {
    const ids = Array.from(idx.t.values() as ArrayLike<number>, (k) => (k < 0 ? k + x.sym!.length : k));
    const vals = ids.map((k) => x.sym![k] ?? null);
    const data = ids.map((k) => x.t.values()[k] as number);
    return [marked(intConst(data, [...idx.t.shape]), vals, [x])];
  }
  return [ctx.fn(onnxGather, [x, idx, axis])];
};

const concatOp: Handler = (ctx) => {
  const axis = ctx.int('axis', 0);
  const ins = (ctx.node.input ?? [])
    .map((_, i) => ctx.input(i))
    .filter((v) => v.kind === 'dyn' || v.t.size > 0 || ctx.node.input!.length === 1);
  ctx.limit([ins.reduce((n, v) => n + (v.kind === 'const' ? v.t.size : v.ex.size), 0)]);
  const syms = ins.map((v) =>
    v.kind === 'const' ? (v.sym ?? Array.from(v.t.values() as ArrayLike<number>, Number)) : null,
  );
  const out = ctx.fn(cat, [ins, axis]);
  if (out.kind === 'const' && ins.some((v) => v.kind === 'const' && v.sym) && syms.every((s) => s !== null)) {
    return [{ ...out, sym: syms.flat() as (number | null)[], ...(batchOf(...ins) ? { batch: batchOf(...ins) } : {}) }];
  }
  return [out];
};

const unsqueezeOp: Handler = (ctx) => {
  const axes = axesOf(ctx, 13);
  if (!axes) throw new Unsupported('axes are required');
  const x = ctx.input(0);
  const out = ctx.fn(onnxUnsqueeze, [x, axes]);
  return [x.kind === 'const' && x.sym ? marked(out, x.sym, [x]) : out];
};

/** Cast, and CastLike (opset 15) to the type of its second input. `saturate` (opset 19) matters only for float8 targets, which are refused. */
const castOp: Handler = (ctx) => {
  const x = ctx.input(0);
  let to: 'float32' | 'int32' | 'bool';
  if (ctx.opType === 'CastLike') to = ctx.ex(1).dtype as typeof to;
  else {
    const elem = ctx.int('to', 1);
    const dtype = qtkDType(elem);
    if (!dtype) throw new Unsupported(`it casts to ${onnxTypeName(elem)}; QTK computes in ${COMPUTED_TYPES} only`);
    to = dtype;
  }
  const out = ctx.fn(onnxCast, [x, to]);
  return [x.kind === 'const' && x.sym ? marked(out, x.sym, [x]) : out];
};

const sliceOp: Handler = (ctx) => {
  const x = ctx.ex(0);
  let starts: number[];
  let ends: number[];
  let axes: number[] | null;
  let steps: number[] | null;
  if (ctx.opset >= 10) {
    starts = ctx.constInts(1, 'starts')!;
    ends = ctx.constInts(2, 'ends')!;
    axes = ctx.constInts(3, 'axes');
    steps = ctx.constInts(4, 'steps');
  } else {
    starts = ctx.ints('starts')!;
    ends = ctx.ints('ends')!;
    axes = ctx.ints('axes');
    steps = null;
  }
  axes ??= starts.map((_, i) => i);
  steps ??= starts.map(() => 1);
  const v = ctx.input(0);
  const args = [starts.map(clampI32), ends.map(clampI32), axes, steps];
  if (v.kind === 'const' && v.sym && x.ndim === 1) {
    const out = ctx.fn(onnxSlice, [v, ...args]);
    const idx = onnxSlice(
      new Tensor({ data: Int32Array.from(v.sym.map((_, i) => i)), shape: [v.sym.length], dtype: 'int32' }),
      ...(args as [number[], number[], number[], number[]]),
    );
    const sym = Array.from(idx.values() as ArrayLike<number>, (i) => v.sym![i] ?? null);
    return [marked(out, sym, [v])];
  }
  return [ctx.fn(onnxSlice, [v, ...args])];
};

const splitOp: Handler = (ctx) => {
  const x = ctx.ex(0);
  const axis = ctx.int('axis', 0);
  const a = axis < 0 ? axis + x.ndim : axis;
  let sizes = ctx.opset >= 13 ? ctx.constInts(1, 'split') : ctx.ints('split');
  const n = (ctx.node.output ?? []).length;
  // opset 18: num_outputs equal parts, the last one smaller when the axis does not divide (as without it before)
  const numOutputs = ctx.opset >= 18 ? ctx.int('num_outputs', 0) : 0;
  if (numOutputs !== 0 && (numOutputs !== n || (sizes && sizes.length > 0))) {
    throw new OnnxFormatError(
      `importOnnx: Split '${ctx.name}': num_outputs = ${numOutputs} ${sizes && sizes.length > 0 ? 'is given with the split input (give one of them)' : `but the node has ${n} outputs`}; the model is invalid`,
    );
  }
  if (!sizes || sizes.length === 0) {
    const total = x.shape[a]!;
    const chunk = Math.ceil(total / n);
    sizes = Array.from({ length: n }, (_, i) => Math.max(0, Math.min(chunk, total - i * chunk)));
  }
  return ctx.imp.callMulti(split, [ctx.input(0), sizes, a], ctx.name);
};

const padOp: Handler = (ctx) => {
  const mode = ctx.str('mode', 'constant');
  let pads: number[];
  let value = 0;
  const xs = ctx.ex(0).shape;
  if (ctx.opset >= 11) {
    pads = ctx.constInts(1, 'pads')!;
    if (ctx.has(2)) {
      if (!ctx.isConst(2)) throw new Unsupported('constant_value must be a constant');
      value = ctx.ex(2).values()[0] as number;
    }
    const axes = ctx.opset >= 18 ? ctx.constInts(3, 'axes') : null;
    if (axes) pads = padsOverAllAxes(ctx, pads, axes, xs.length);
  } else {
    pads = ctx.ints('pads')!;
    value = ctx.float('value', 0);
  }
  const modes = ctx.opset >= 19 ? ['constant', 'reflect', 'edge', 'wrap'] : ['constant', 'reflect', 'edge'];
  if (!modes.includes(mode))
    throw new Unsupported(`mode '${mode}' is not supported (${modes.join(', ')} are at opset ${ctx.opset})`);
  if (pads.length !== 2 * xs.length || !pads.every(Number.isSafeInteger)) {
    throw new OnnxFormatError(
      `importOnnx: Pad '${ctx.name}': pads [${pads.join(', ')}] must be ${2 * xs.length} integers for an input of rank ${xs.length}; the model is invalid`,
    );
  }
  ctx.limit(xs.map((n, i) => Math.max(0, n + pads[i]! + pads[xs.length + i]!)));
  return [ctx.fn(onnxPad, [ctx.input(0), pads, mode, value])];
};

/** Pad's `axes` (opset 18): pads [begins, ends] for those axes only, spread over all `rank` axes (0 elsewhere). */
function padsOverAllAxes(ctx: NodeContext, pads: number[], axes: number[], rank: number): number[] {
  const norm = axes.map((a) => (a < 0 ? a + rank : a));
  const bad = norm.some((a, i) => !Number.isInteger(a) || a < 0 || a >= rank || norm.indexOf(a) !== i);
  if (bad || pads.length !== 2 * axes.length) {
    throw new OnnxFormatError(
      `importOnnx: Pad '${ctx.name}': axes [${axes.join(', ')}] must be distinct axes of an input of rank ${rank}, with 2 pads each (got ${pads.length}); the model is invalid`,
    );
  }
  const full = new Array<number>(2 * rank).fill(0);
  norm.forEach((a, i) => {
    full[a] = pads[i]!;
    full[rank + a] = pads[axes.length + i]!;
  });
  return full;
}

const constantOp: Handler = (ctx) => {
  const t = ctx.tensorAttr('value');
  if (t) return [{ kind: 'const', t: constToTensor(t) }];
  const f = ctx.attrs.get('value_float');
  if (f) return [{ kind: 'const', t: new Tensor({ data: Float32Array.of(f.f ?? 0), shape: [], dtype: 'float32' }) }];
  const fs = ctx.floats('value_floats');
  if (fs)
    return [{ kind: 'const', t: new Tensor({ data: Float32Array.from(fs), shape: [fs.length], dtype: 'float32' }) }];
  const i = ctx.attrs.get('value_int');
  if (i) return [intConst([Number(i.i ?? 0)], [])];
  const is = ctx.ints('value_ints');
  if (is) return [intConst(is)];
  throw new Unsupported('only value, value_float(s) and value_int(s) constants are supported');
};

const constantOfShape: Handler = (ctx) => {
  const shape = ctx.constInts(0, 'shape')!;
  const s = ctx.input(0);
  if (s.kind === 'const' && s.sym) fixedBatch(ctx, 'makes a tensor whose shape is computed from the batch', null);
  if (ImportLimits.count(shape) === Infinity) {
    throw new OnnxFormatError(
      `importOnnx: ConstantOfShape '${ctx.name}': shape [${shape.join(', ')}] must hold non-negative integers; the model is invalid`,
    );
  }
  ctx.limit(shape);
  const v = ctx.tensorAttr('value');
  const t = v ? constToTensor(v) : new Tensor({ data: new Float32Array(1), shape: [1], dtype: 'float32' });
  const size = shape.reduce((p, d) => p * d, 1);
  const data =
    t.dtype === 'float32' ? new Float32Array(size) : t.dtype === 'bool' ? new Uint8Array(size) : new Int32Array(size);
  data.fill(t.values()[0] as number);
  return [{ kind: 'const', t: new Tensor({ data, shape, dtype: t.dtype }) }];
};

export const tensorHandlers: Record<string, Handler> = {
  Add: arithmetic(add),
  Sub: arithmetic(sub),
  Mul: arithmetic(mul),
  Div: arithmetic(div),
  Pow: binary(pow),
  Sqrt: unary(sqrt),
  Reciprocal: unary(reciprocal),
  Exp: unary(exp),
  Log: unary(log),
  Abs: unary(abs),
  Neg: unary(neg),
  MatMul: matmulOp,
  Concat: concatOp,
  Split: splitOp,
  Slice: sliceOp,
  Reshape: reshapeOp,
  Transpose: (ctx) => [ctx.fn(onnxTranspose, [ctx.input(0), ctx.ints('perm')])],
  Squeeze: (ctx) => {
    const x = ctx.input(0);
    const out = ctx.fn(onnxSqueeze, [x, axesOf(ctx, 13)]);
    return [x.kind === 'const' && x.sym ? marked(out, x.sym, [x]) : out];
  },
  Unsqueeze: unsqueezeOp,
  Pad: padOp,
  Identity: (ctx) => [ctx.input(0)],
  Dropout: (ctx) => {
    const training = ctx.has(2) ? ctx.constInts(2, 'training_mode')![0] : 0;
    const ratio = ctx.has(1) && ctx.isConst(1) ? (ctx.ex(1).values()[0] as number) : ctx.has(1) ? NaN : 0.5;
    // Training mode drops at random; only a zero ratio makes it the identity.
    if (training && ratio !== 0)
      throw new Unsupported('training_mode = true with a non-zero ratio is not supported (inference only)');
    const wantMask = (ctx.node.output ?? []).slice(1).some(Boolean);
    return wantMask ? [ctx.input(0), ctx.fn(onnxOnesMask, [ctx.input(0)], '_mask')] : [ctx.input(0)];
  },
  Constant: constantOp,
  ConstantOfShape: constantOfShape,
  Shape: shapeOp,
  Gather: gatherOp,
  Cast: castOp,
  CastLike: castOp,
};
