// Functional ops and tensor methods as ONNX nodes (call_function / call_method).
import type { Argument } from '@qtk/ir';
import { Tensor, type ResizeOptions, samePadding } from '@qtk/tensor';
import { OnnxExportError } from './errors.js';
import type { OnnxBuilder } from './export-builder.js';
import type { ExportStep } from './export-modules.js';
import { exportElementwise } from './export-elementwise.js';
import { reduceNode } from './export-reduce.js';

function scalarOrTensor(b: OnnxBuilder, v: unknown, name: string, names: string[], i: number): string {
  if (typeof v === 'number') return b.floatConst([v], `${name}_scalar`, []);
  return names[i]!;
}

const REDUCE_OP_TYPES = { sum: 'ReduceSum', mean: 'ReduceMean', max: 'ReduceMax', min: 'ReduceMin' } as const;

const BINARY: Record<string, string> = { add: 'Add', sub: 'Sub', mul: 'Mul', div: 'Div', pow: 'Pow' };
const UNARY: Record<string, string> = {
  relu: 'Relu',
  sigmoid: 'Sigmoid',
  tanh: 'Tanh',
  neg: 'Neg',
  exp: 'Exp',
  log: 'Log',
  sqrt: 'Sqrt',
  abs: 'Abs',
  reciprocal: 'Reciprocal',
  contiguous: 'Identity',
};

/** Functional ops and tensor methods (args[0] is the tensor for methods) as ONNX nodes. */
export function exportCall(op: string, s: ExportStep, rawArgs: readonly Argument[]): string[] {
  const { b, name, args } = s;
  const x = s.inputs[0]!;
  const x0 = args[0] as Tensor;
  if (BINARY[op]) {
    // Tensor operands are in `inputs` in order; numbers become scalar initializers.
    let k = 0;
    const ins = [0, 1].map((i) =>
      args[i] instanceof Tensor ? s.inputs[k++]! : scalarOrTensor(b, args[i], name, s.inputs, 0),
    );
    return b.node(BINARY[op]!, ins, name);
  }
  if (UNARY[op]) return b.node(UNARY[op]!, [x], name);
  const norm = (a: number) => (a < 0 ? a + x0.ndim : a);
  switch (op) {
    case 'matmul':
      return b.node('MatMul', s.inputs.slice(0, 2), name);
    case 'cat':
    case 'onnx.concat':
      return b.node('Concat', s.inputs, name, { axis: (args[1] as number | undefined) ?? 0 });
    case 'softmax':
    case 'logSoftmax':
      return b.node(op === 'softmax' ? 'Softmax' : 'LogSoftmax', [x], name, {
        axis: norm((args[1] as number | undefined) ?? -1),
      });
    case 'flatten':
    case 'reshape':
    case 'view':
    case 'onnx.reshape':
    case 'onnx.flatten': {
      const out = s.out as Tensor;
      // an imported target keeps its -1 / 0 (a batch the import found in shape arithmetic, anywhere in the shape)
      const target = op === 'onnx.reshape' && !args[2] ? (args[1] as number[]) : null;
      if (target?.some((d) => d === -1 || d === 0))
        return b.node('Reshape', [x, b.intConst(target, `${name}_shape`)], name);
      // A zero-size dim needs allowzero (opset 14+), and then 0 cannot stand for "copy the batch".
      const zeroDims = out.shape.includes(0);
      if (zeroDims && b.opset < 14)
        throw new OnnxExportError(`exportOnnx: reshape '${name}' to a zero-size dim needs opset 14 or later`, {
          neededOpset: 14,
        });
      // a reshape / view given a -1 keeps it, so a batch folded into another dim ([N, 4, 6] → [-1, 2, 6]) follows
      // the batch of each run
      const given =
        op === 'onnx.reshape' || op.includes('flatten') ? null : Array.isArray(args[1]) ? args[1] : args.slice(1);
      const own = given?.every((d) => typeof d === 'number') && given.includes(-1) ? (given as number[]) : null;
      const shape = (own && !zeroDims ? own : out.shape).map((d, i) =>
        !zeroDims && i === 0 && s.batch !== null && x0.shape[0] === s.batch && d === s.batch ? 0 : d,
      );
      return b.node('Reshape', [x, b.intConst(shape, `${name}_shape`)], name, { allowzero: zeroDims ? 1 : undefined });
    }
    case 'permute':
    case 'onnx.transpose':
      // permute(x, dims), the method's permute(...dims), onnx.transpose(x, perm | null)
      return b.node('Transpose', [x], name, {
        perm:
          typeof args[1] === 'number'
            ? (args.slice(1) as number[])
            : ((args[1] as number[] | null) ?? x0.shape.map((_, i) => x0.ndim - 1 - i)),
      });
    case 'transpose': {
      const perm = x0.shape.map((_, i) => i);
      const d0 = norm((args[1] as number | undefined) ?? -2);
      const d1 = norm((args[2] as number | undefined) ?? -1);
      [perm[d0], perm[d1]] = [perm[d1]!, perm[d0]!];
      return b.node('Transpose', [x], name, { perm });
    }
    case 'relu6':
      return b.node('Clip', [x, b.floatConst([0], `${name}_min`, []), b.floatConst([6], `${name}_max`, [])], name);
    case 'clamp': {
      const lo = args[1] as number | null | undefined;
      const hi = args[2] as number | null | undefined;
      return b.node(
        'Clip',
        [
          x,
          lo == null ? '' : b.floatConst([lo], `${name}_min`, []),
          hi == null ? '' : b.floatConst([hi], `${name}_max`, []),
        ],
        name,
      );
    }
    case 'mean':
    case 'sum': {
      const ax = args[1] as number | number[] | undefined;
      const axes = (ax === undefined ? x0.shape.map((_, i) => i) : typeof ax === 'number' ? [ax] : ax).map(norm);
      return reduceNode(b, op === 'mean' ? 'ReduceMean' : 'ReduceSum', x, axes, Boolean(args[2]), name);
    }
    case 'unsqueeze':
    case 'squeeze': {
      const a = args[1];
      const axes =
        a === undefined
          ? null
          : (typeof a === 'number' ? [a] : (a as number[])).map((v) =>
              v < 0 ? v + (op === 'unsqueeze' ? x0.ndim + 1 : x0.ndim) : v,
            );
      const opType = op === 'unsqueeze' ? 'Unsqueeze' : 'Squeeze';
      if (b.opset >= 13) return b.node(opType, axes ? [x, b.intConst(axes, `${name}_axes`)] : [x], name);
      return b.node(opType, [x], name, { axes: axes ?? undefined });
    }
    case 'getitem':
      return [];
    default:
      {
        const more = exportMore(op, s);
        if (more) return more;
      }
      void rawArgs;
      throw new OnnxExportError(`exportOnnx: node '${name}' calls '${op}', which has no ONNX form yet`);
  }
}

const CAST_TO: Record<string, number> = { float32: 1, int32: 7, bool: 9 };

function spatialPads(padding: unknown, r: number, kernel: number[], dilation: number[]): number[] {
  if (padding === 'valid' || padding === undefined) return new Array<number>(2 * r).fill(0);
  if (padding === 'same') {
    return samePadding(kernel, dilation);
  }
  const p = typeof padding === 'number' ? new Array<number>(r).fill(padding) : (padding as number[]);
  return [...p, ...p];
}

function perDim(v: unknown, r: number, def: number): number[] {
  if (v === undefined || v === null) return new Array<number>(r).fill(def);
  return typeof v === 'number' ? new Array<number>(r).fill(v) : [...(v as number[])];
}

/** The functions the importer itself emits (onnx.*), and other @qtk/tensor ops with an ONNX form. */
function exportMore(op: string, s: ExportStep): string[] | null {
  const { b, name, args } = s;
  const x = s.inputs[0]!;
  const x0 = args[0] as Tensor;
  const ints = (v: number[], what: string) => b.intConst(v, `${name}_${what}`);
  const scalar = (v: number, what: string) => b.floatConst([v], `${name}_${what}`, []);
  switch (op) {
    case 'onnx.slice': {
      const [, starts, ends, axes, steps] = args as [Tensor, number[], number[], number[], number[]];
      return b.node(
        'Slice',
        [x, ints(starts, 'starts'), ints(ends, 'ends'), ints(axes, 'axes'), ints(steps, 'steps')],
        name,
      );
    }
    case 'onnx.pad': {
      const [, pads, mode, value] = args as [Tensor, number[], string, number];
      if (mode === 'wrap' && b.opset < 19)
        throw new OnnxExportError(`exportOnnx: pad '${name}' in mode 'wrap' needs opset 19; pass { opset: 19 }`, {
          neededOpset: 19,
        });
      return b.node('Pad', [x, ints(pads, 'pads'), scalar(value, 'value')], name, { mode });
    }
    case 'onnx.gather':
      return b.node('Gather', s.inputs.slice(0, 2), name, { axis: args[2] as number });
    case 'onnx.squeeze':
    case 'onnx.unsqueeze': {
      const axes = args[1] as number[] | null;
      const opType = op === 'onnx.squeeze' ? 'Squeeze' : 'Unsqueeze';
      if (b.opset >= 13) return b.node(opType, axes ? [x, ints(axes, 'axes')] : [x], name);
      return b.node(opType, [x], name, { axes: axes ?? undefined });
    }
    case 'onnx.reduce': {
      const [, kind, axes, keepdims] = args as [Tensor, 'sum' | 'mean' | 'max' | 'min', number[] | null, boolean];
      const opType = REDUCE_OP_TYPES[kind];
      return reduceNode(b, opType, x, axes ?? x0.shape.map((_, i) => i), keepdims, name);
    }
    case 'onnx.clip': {
      let k = 1;
      const bound = (v: unknown, what: string) =>
        v === null ? '' : typeof v === 'number' ? scalar(v, what) : s.inputs[k++]!;
      return b.node('Clip', [x, bound(args[1], 'min'), bound(args[2], 'max')], name);
    }
    case 'onnx.prelu':
      return b.node('PRelu', s.inputs.slice(0, 2), name);
    case 'onnx.hardSigmoid':
      return b.node('HardSigmoid', [x], name, {
        alpha: { float: args[1] as number },
        beta: { float: args[2] as number },
      });
    case 'onnx.cast':
      return b.node('Cast', [x], name, { to: CAST_TO[args[1] as string]! });
    case 'onnx.layerNormStats': {
      const [, axis, eps] = args as [Tensor, number, number];
      const a = axis < 0 ? axis + x0.ndim : axis;
      const axes = x0.shape.slice(a).map((_, i) => a + i);
      const mean = reduceNode(b, 'ReduceMean', x, axes, true, `${name}_mean`);
      const d = b.node('Sub', [x, mean[0]!], `${name}_centred`);
      const sq = b.node('Mul', [d[0]!, d[0]!], `${name}_square`)[0]!;
      const v = reduceNode(b, 'ReduceMean', sq, axes, true, `${name}_var`);
      const sd = b.node('Sqrt', b.node('Add', [v[0]!, scalar(eps, 'eps')], `${name}_var_eps`), `${name}_std`);
      return [mean[0]!, b.node('Reciprocal', sd, `${name}_inv_std`)[0]!];
    }
    case 'onnx.onesMask': {
      const shape = b.node('Shape', [x], `${name}_shape`);
      return b.node('ConstantOfShape', shape, name, {
        value: { tensor: new Tensor({ data: Uint8Array.of(1), shape: [1], dtype: 'bool' }) },
      });
    }
    case 'onnx.globalMaxPool':
      return b.node('GlobalMaxPool', [x], name);
    case 'onnx.softmaxCoerced': {
      const [, axis, log] = args as [Tensor, number, boolean];
      const opType = log ? 'LogSoftmax' : 'Softmax';
      if (b.opset < 13) return b.node(opType, [x], name, { axis });
      const flat = b.node('Flatten', [x], `${name}_flatten`, { axis });
      const y = b.node(opType, flat, `${name}_${opType.toLowerCase()}`, { axis: -1 });
      return b.node(
        'Reshape',
        [
          y[0]!,
          b.intConst(
            x0.shape.map((d, i) => (i === 0 && s.batch !== null && d === s.batch ? 0 : d)),
            `${name}_shape`,
          ),
        ],
        name,
      );
    }
    case 'onnx.avgPoolExcludePad': {
      const [, kernel, strides, pads, ceil] = args as [Tensor, number[], number[], number[], boolean];
      return b.node('AveragePool', [x], name, {
        kernel_shape: kernel,
        strides,
        pads,
        ceil_mode: ceil ? 1 : 0,
        count_include_pad: 0,
      });
    }
    case 'onnx.avgPoolDilated': {
      const [, kernel, strides, dilations, pads, includePad] = args as [
        Tensor,
        number[],
        number[],
        number[],
        number[],
        boolean,
      ];
      if (b.opset < 19)
        throw new OnnxExportError(`exportOnnx: the dilated average pool '${name}' needs opset 19; pass { opset: 19 }`, {
          neededOpset: 19,
        });
      return b.node('AveragePool', [x], name, {
        kernel_shape: kernel,
        strides,
        dilations,
        pads,
        count_include_pad: includePad ? 1 : 0,
      });
    }
    case 'resize': {
      const o = args[1] as ResizeOptions;
      const attrs = {
        mode: o.mode ?? 'nearest',
        coordinate_transformation_mode: o.coordinateTransformationMode ?? 'half_pixel',
        nearest_mode: o.nearestMode ?? 'round_prefer_floor',
        cubic_coeff_a: { float: o.cubicCoeffA ?? -0.75 },
        exclude_outside: o.excludeOutside ? 1 : 0,
      };
      if (attrs.coordinate_transformation_mode === 'half_pixel_symmetric' && b.opset < 19)
        throw new OnnxExportError(
          `exportOnnx: resize '${name}' with coordinate transformation 'half_pixel_symmetric' needs opset 19; pass { opset: 19 }`,
          { neededOpset: 19 },
        );
      // sizes with their own scales (an imported keep_aspect_ratio_policy): the scales alone give the same output size, or no Resize can say it
      const bySizes = o.sizes && !o.scales;
      if (o.sizes && o.scales && o.sizes.some((n, i) => n !== Math.floor(x0.shape[i]! * o.scales![i]!)))
        throw new OnnxExportError(
          `exportOnnx: resize '${name}' maps [${x0.shape.join(', ')}] to [${o.sizes.join(', ')}] with scales [${o.scales.join(', ')}] (a keep_aspect_ratio_policy rounding), which an ONNX Resize does not express`,
        );
      const ins = bySizes
        ? [x, '', '', ints([...o.sizes!], 'sizes')]
        : [x, '', b.floatConst([...o.scales!], `${name}_scales`)];
      return b.node('Resize', ins, name, attrs);
    }
    case 'conv1d':
    case 'conv2d':
    case 'conv3d': {
      const w = args[1] as Tensor;
      const o = (args[3] ?? {}) as { stride?: unknown; padding?: unknown; dilation?: unknown; groups?: number };
      const r = w.ndim - 2;
      const kernel = w.shape.slice(2);
      const dil = perDim(o.dilation, r, 1);
      return b.node('Conv', s.inputs.slice(0, args[2] ? 3 : 2), name, {
        kernel_shape: kernel,
        strides: perDim(o.stride, r, 1),
        pads: spatialPads(o.padding, r, kernel, dil),
        dilations: dil,
        group: o.groups ?? 1,
      });
    }
    case 'convTranspose1d':
    case 'convTranspose2d': {
      const w = args[1] as Tensor;
      const o = (args[3] ?? {}) as {
        stride?: unknown;
        padding?: unknown;
        outputPadding?: unknown;
        dilation?: unknown;
        groups?: number;
      };
      const r = w.ndim - 2;
      const p = perDim(o.padding, r, 0);
      return b.node('ConvTranspose', s.inputs.slice(0, args[2] ? 3 : 2), name, {
        kernel_shape: w.shape.slice(2),
        strides: perDim(o.stride, r, 1),
        pads: [...p, ...p],
        output_padding: perDim(o.outputPadding, r, 0),
        dilations: perDim(o.dilation, r, 1),
        group: o.groups ?? 1,
      });
    }
    case 'batchNorm': {
      // batchNorm(x, mean, var, weight, bias, { eps }) in inference
      const o = (args[5] ?? {}) as { eps?: number; training?: boolean };
      if (o.training) throw new OnnxExportError(`exportOnnx: batchNorm '${name}' runs in training mode`);
      const [xi, mean, variance, weight, bias] = s.inputs;
      return b.node('BatchNormalization', [xi!, weight!, bias!, mean!, variance!], name, {
        epsilon: { float: o.eps ?? 1e-5 },
      });
    }
    case 'layerNorm': {
      if (b.opset < 17)
        throw new OnnxExportError(
          `exportOnnx: layerNorm '${name}' needs opset 17 (LayerNormalization); pass { opset: 17 }`,
          { neededOpset: 17 },
        );
      const shape = (typeof args[1] === 'number' ? [args[1]] : args[1]) as number[];
      const size = shape.reduce((p, d) => p * d, 1);
      let k = 1;
      const scale =
        args[2] instanceof Tensor
          ? s.inputs[k++]!
          : b.floatConst(new Array<number>(size).fill(1), `${name}_scale`, shape);
      const ins = [x, scale];
      if (args[3] instanceof Tensor) ins.push(s.inputs[k]!);
      return b.node('LayerNormalization', ins, name, {
        axis: -shape.length,
        epsilon: { float: (args[4] as number | undefined) ?? 1e-5 },
      });
    }
    case 'elu':
      return b.node('Elu', [x], name, { alpha: { float: (args[1] as number | undefined) ?? 1 } });
    case 'leakyRelu':
      return b.node('LeakyRelu', [x], name, { alpha: { float: (args[1] as number | undefined) ?? 0.01 } });
    case 'selu':
      return b.node('Selu', [x], name);
    case 'hardswish':
      if (b.opset >= 14) return b.node('HardSwish', [x], name);
      return b.node(
        'Mul',
        [x, b.node('HardSigmoid', [x], `${name}_hardsigmoid`, { alpha: { float: 1 / 6 }, beta: { float: 0.5 } })[0]!],
        name,
      );
    case 'maximum':
    case 'minimum':
      return b.node(op === 'maximum' ? 'Max' : 'Min', s.inputs.slice(0, 2), name);
    case 'linear': {
      const transB = b.node('Transpose', [s.inputs[1]!], `${name}_weight_t`, { perm: [1, 0] });
      const mm = b.node('MatMul', [x, transB[0]!], args[2] ? `${name}_matmul` : name);
      return args[2] ? b.node('Add', [mm[0]!, s.inputs[2]!], name) : mm;
    }
    default:
      return exportElementwise(op, s);
  }
}
