// Float ONNX forms of the value ops that the float exporter has no form for, or whose ONNX form
// would not pick the same elements as QTK (nearest resize, python-style slices): run on the
// integers (in float32) of a FixedValueOp. Each reproduces QTK's element selection exactly.
import { type Module, ChannelShuffle, PixelShuffle, PixelUnshuffle, Upsample } from '@qtk/nn';
import type { InterpolateOptions, SliceSpec, Tensor } from '@qtk/tensor';
import { OnnxExportError, type ExportStep } from '@qtk/onnx';

type Target = { kind: 'module'; module: Module } | { kind: 'function' | 'method'; name: string };

/** A reshape target for `x`: dim 0 copied from the input (0) so the batch stays dynamic. */
function shapeConst(s: ExportStep, dims: number[], what: string): string {
  return s.b.intConst([0, ...dims.slice(1)], `${s.name}_${what}`);
}

/** reshape → transpose → reshape (pixel unshuffle, channel shuffle, as @qtk/nn computes them). */
function regroup(s: ExportStep, split: number[], perm: number[], out: number[]): string[] {
  const { b, name } = s;
  const r1 = b.node('Reshape', [s.inputs[0]!, shapeConst(s, split, 'split_shape')], `${name}_split`)[0]!;
  const t = b.node('Transpose', [r1], `${name}_transpose`, { perm })[0]!;
  return b.node('Reshape', [t, shapeConst(s, out, 'shape')], name);
}

function pair(v: number | readonly number[]): [number, number] {
  return typeof v === 'number' ? [v, v] : [v[0]!, v[1]!];
}

/** QTK's nearest source index of each output index along one dim (@qtk/tensor's interpolate). */
function nearestIndices(inSize: number, outSize: number, scale: number): number[] {
  return Array.from({ length: outSize }, (_, o) => {
    if (outSize === inSize) return o;
    if (outSize === 2 * inSize) return o >> 1;
    return Math.min(Math.floor(Math.fround(o * scale)), inSize - 1);
  });
}

/**
 * Nearest resize as two Gathers with the source indices QTK uses (its float32 coordinate
 * arithmetic differs from ONNX Resize's for some scales, a Gather cannot).
 */
function nearestResize(s: ExportStep, o: InterpolateOptions): string[] {
  const x = s.args[0] as Tensor;
  const y = s.out as Tensor;
  const inSize = [x.shape[2]!, x.shape[3]!];
  const outSize = [y.shape[2]!, y.shape[3]!];
  const scales =
    o.size !== undefined
      ? inSize.map((d, i) => Math.fround(d / outSize[i]!))
      : pair(o.scaleFactor!).map((f) => Math.fround(1 / f));
  const h = nearestIndices(inSize[0]!, outSize[0]!, scales[0]!);
  const w = nearestIndices(inSize[1]!, outSize[1]!, scales[1]!);
  const { b, name } = s;
  const rows = b.node('Gather', [s.inputs[0]!, b.intConst(h, `${name}_rows`)], `${name}_h`, { axis: 2 })[0]!;
  return b.node('Gather', [rows, b.intConst(w, `${name}_cols`)], name, { axis: 3 });
}

/** Python's slice.indices as @qtk/tensor's slice resolves it: the first index and the count. */
function resolveSlice(n: number, spec: SliceSpec): { start: number; length: number; step: number } {
  const step = spec.step ?? 1;
  const clampIndex = (i: number, lo: number, hi: number) => {
    const k = i < 0 ? i + n : i;
    return k < lo ? lo : k > hi ? hi : k;
  };
  if (step > 0) {
    const st = spec.start === undefined ? 0 : clampIndex(spec.start, 0, n);
    const e = spec.end === undefined ? n : clampIndex(spec.end, 0, n);
    return { start: st, length: e > st ? Math.ceil((e - st) / step) : 0, step };
  }
  const st = spec.start === undefined ? n - 1 : clampIndex(spec.start, -1, n - 1);
  const e = spec.end === undefined ? -1 : clampIndex(spec.end, -1, n - 1);
  return { start: st, length: st > e ? Math.ceil((st - e) / -step) : 0, step };
}

function sliceForm(s: ExportStep): string[] {
  const x = s.args[0] as Tensor;
  const spec = (s.args[1] as SliceSpec | undefined) ?? {};
  const axis = (spec.axis ?? 0) < 0 ? spec.axis! + x.ndim : (spec.axis ?? 0);
  const { start, length, step } = resolveSlice(x.shape[axis]!, spec);
  // the resolved range, its end past index 0 written as -(n + 1) (ONNX reads -1 as the last index)
  const end = length === 0 ? start : start + length * step;
  const ints = (v: number, what: string) => s.b.intConst([v], `${s.name}_${what}`);
  return s.b.node(
    'Slice',
    [
      s.inputs[0]!,
      ints(start, 'starts'),
      ints(end < 0 ? -(x.shape[axis]! + 1) : end, 'ends'),
      ints(axis, 'axes'),
      ints(step, 'steps'),
    ],
    s.name,
  );
}

function splitForm(s: ExportStep): string[] {
  const x = s.args[0] as Tensor;
  const parts = s.out as Tensor[];
  const a = (s.args[2] as number | undefined) ?? 0;
  const axis = a < 0 ? a + x.ndim : a;
  const sizes = parts.map((t) => t.shape[axis]!);
  const ins = [s.inputs[0]!];
  const attrs: Record<string, number | number[]> = { axis };
  if (s.b.opset >= 13) ins.push(s.b.intConst(sizes, `${s.name}_split`));
  else attrs.split = sizes;
  return s.b.node('Split', ins, s.name, attrs, parts.length);
}

/** F.pad's pairs (last dim first) as ONNX Pad's begins-then-ends over every dim. */
function padForm(s: ExportStep): string[] {
  const x = s.args[0] as Tensor;
  const pads = s.args[1] as number[];
  const mode = (s.args[2] as string | undefined) ?? 'constant';
  const value = (s.args[3] as number | undefined) ?? 0;
  const begin = new Array<number>(x.ndim).fill(0);
  const end = new Array<number>(x.ndim).fill(0);
  for (let k = 0; k < pads.length / 2; k++) {
    begin[x.ndim - 1 - k] = pads[2 * k]!;
    end[x.ndim - 1 - k] = pads[2 * k + 1]!;
  }
  const onnxMode = mode === 'replicate' ? 'edge' : mode;
  return s.b.node(
    'Pad',
    [s.inputs[0]!, s.b.intConst([...begin, ...end], `${s.name}_pads`), s.b.floatConst([value], `${s.name}_value`, [])],
    s.name,
    { mode: onnxMode },
  );
}

function maxPoolForm(s: ExportStep): string[] {
  const kernel = pair(s.args[1] as number | number[]);
  const o =
    (s.args[2] as
      | { stride?: number | number[]; padding?: number | number[]; dilation?: number | number[]; ceilMode?: boolean }
      | undefined) ?? {};
  const padding = pair(o.padding ?? 0);
  return s.b.node('MaxPool', [s.inputs[0]!], s.name, {
    kernel_shape: kernel,
    strides: pair(o.stride ?? kernel),
    pads: [...padding, ...padding],
    dilations: pair(o.dilation ?? 1),
    ceil_mode: o.ceilMode ? 1 : 0,
  });
}

/** Expand to the output's shape, with 1 where the input already has the dim (so the batch stays dynamic). */
function expandForm(s: ExportStep): string[] {
  const x = s.args[0] as Tensor;
  const out = (s.out as Tensor).shape;
  const lead = out.length - x.ndim;
  const shape = out.map((d, i) => (i >= lead && x.shape[i - lead] === d ? 1 : d));
  return s.b.node('Expand', [s.inputs[0]!, s.b.intConst(shape, `${s.name}_shape`)], s.name);
}

function moduleForm(m: Module, s: ExportStep): string[] | null {
  const x = s.args[0] as Tensor;
  if (m instanceof PixelShuffle)
    return s.b.node('DepthToSpace', [s.inputs[0]!], s.name, { blocksize: m.upscaleFactor, mode: 'CRD' });
  if (m instanceof PixelUnshuffle) {
    const [n, c, h, w] = x.shape as [number, number, number, number];
    const r = m.downscaleFactor;
    return regroup(s, [n, c, h / r, r, w / r, r], [0, 1, 3, 5, 2, 4], [n, c * r * r, h / r, w / r]);
  }
  if (m instanceof ChannelShuffle) {
    const [n, c, h, w] = x.shape as [number, number, number, number];
    const g = m.groups;
    return regroup(s, [n, g, c / g, h, w], [0, 2, 1, 3, 4], [n, c, h, w]);
  }
  if (m instanceof Upsample && m.mode === 'nearest')
    return nearestResize(s, m.size !== undefined ? { size: m.size } : { scaleFactor: m.scaleFactor! });
  return null;
}

/**
 * The ONNX form of a value op's target on float32 integers, when it has one here; null leaves the
 * target to the float exporter.
 */
export function valueOpForm(target: Target, s: ExportStep): string[] | null {
  if (target.kind === 'module') return moduleForm(target.module, s);
  switch (target.name) {
    case 'split':
      return splitForm(s);
    case 'slice':
      return sliceForm(s);
    case 'pad':
      return padForm(s);
    case 'maxPool2d':
      return maxPoolForm(s);
    case 'expand':
      return expandForm(s);
    case 'getitem': {
      // an item of split's outputs (the inputs are the pieces, in order)
      const i = s.args[1] as number;
      const picked = s.inputs[i < 0 ? i + s.inputs.length : i];
      if (picked === undefined)
        throw new OnnxExportError(`exportOnnx: getitem '${s.name}' picks item ${i} of ${s.inputs.length}`);
      return [picked];
    }
    case 'interpolate': {
      const o = s.args[1] as InterpolateOptions;
      if ((o.mode ?? 'nearest') !== 'nearest')
        throw new OnnxExportError(
          `exportOnnx: value op '${s.name}' resizes with mode '${o.mode}'; only nearest moves integers`,
        );
      return nearestResize(s, o);
    }
    default:
      return null;
  }
}
