import {
  AdaptiveAvgPool2d,
  AvgPool2d,
  BatchNorm1d,
  BatchNorm2d,
  ChannelShuffle,
  Conv2d,
  ConvTranspose2d,
  ELU,
  Flatten,
  GELU,
  Hardsigmoid,
  Hardswish,
  LayerNorm,
  LeakyReLU,
  Linear,
  MaxPool2d,
  type Module,
  PixelShuffle,
  PReLU,
  ReLU,
  Sigmoid,
  SiLU,
  Softmax,
  Softplus,
  Tanh,
} from '@qtk/nn';
import { onnxGather } from '@qtk/onnx';
import type { OpCapability, QuantDType } from '@qtk/spec';
import * as T from '@qtk/tensor';
import { type Generator, rand, randn, type Tensor } from '@qtk/tensor';
import { BinaryProbeNet, callModule, type Parts, UnaryProbeNet } from './probe-nets.js';

/** One probe model with its data: calibrated on `batches`, then compared on them (inside the calibrated ranges). */
export interface ProbeCase {
  readonly model: Module;
  /** The model's arguments, batch by batch: the calibration data. */
  readonly batches: readonly (readonly Tensor[])[];
  /** The batches the two models are compared on; default: the calibration batches (no observed range clips them). */
  readonly check?: readonly (readonly Tensor[])[];
  /** Boolean outputs (comparisons): the values must be equal, not within a step. */
  readonly exact?: boolean;
}

/** What a probe builder is given: the op's table entry (its `fusable` list), the dtype, a seeded generator. */
export interface ProbeContext {
  readonly capability: OpCapability;
  readonly dtype: QuantDType;
  readonly generator: Generator;
}

/** Builds the small single-op model that exercises one capability-table op. */
export interface OpProbe {
  /** The model, in words ('Conv2d 3→4 3×3 + BatchNorm2d + ReLU'), for test names. */
  readonly model: string;
  build(ctx: ProbeContext): ProbeCase;
}

const BATCHES = 3;

function batchesOf(make: () => Tensor[]): Tensor[][] {
  return Array.from({ length: BATCHES }, make);
}

/** A unary probe on normal data of `shape` times `gain`. */
function normal(
  model: string,
  shape: number[],
  build: (g: Generator, cap: OpCapability) => { parts?: Record<string, Module>; body: (p: Parts, x: Tensor) => Tensor },
  gain = 1,
): OpProbe {
  return {
    model,
    build: ({ generator: g, capability }) => {
      const { parts = {}, body } = build(g, capability);
      return {
        model: new UnaryProbeNet(parts, body).eval(),
        batches: batchesOf(() => [randn(shape, { generator: g }).mul(gain)]),
      };
    },
  };
}

/** A unary probe on uniform data in [lo, hi) (a function's domain: reciprocal above 0, ...). */
function uniform(model: string, lo: number, hi: number, op: () => Module | ((x: Tensor) => Tensor)): OpProbe {
  const shape = [2, 4, 8, 8];
  return {
    model,
    build: ({ generator: g }) => {
      const made = op();
      const isFn = typeof made === 'function' && !('forward' in made);
      const parts: Record<string, Module> = isFn ? {} : { op: made as Module };
      const body = isFn
        ? (_: unknown, x: Tensor) => (made as (x: Tensor) => Tensor)(x)
        : (p: Parts, x: Tensor) => callModule(p.op!, x);
      return {
        model: new UnaryProbeNet(parts, body).eval(),
        batches: batchesOf(() => [rand(shape, { low: lo, high: hi, generator: g })]),
        // as convert-nonlinear.test.ts measures the documented table bounds: on a batch calibration did not see
        check: [[rand(shape, { low: lo, high: hi, generator: g })]],
      };
    },
  };
}

/** A binary probe: operand b's range (and scale) is about 7× a's, as in the elementwise conversion tests. */
function binary(model: string, body: (a: Tensor, b: Tensor) => Tensor, exact = false, shape = [2, 4, 3]): OpProbe {
  return {
    model,
    build: ({ generator: g }) => ({
      model: new BinaryProbeNet(body).eval(),
      batches: batchesOf(() => [randn(shape, { generator: g }), randn(shape, { generator: g }).mul(7)]),
      exact,
    }),
  };
}

const fuses = (cap: OpCapability, op: string) => cap.fusable?.includes(op) ?? false;

/** Non-trivial BatchNorm statistics (running mean in [−0.1, 0.1), variance in [0.5, 1)) and affine parameters. */
function withStats<B extends BatchNorm1d | BatchNorm2d>(bn: B, g: Generator): B {
  const c = bn.runningMean!.size;
  bn.runningMean!.values().set(rand([c], { low: -0.1, high: 0.1, generator: g }).values() as Float32Array);
  bn.runningVar!.values().set(rand([c], { low: 0.5, high: 1, generator: g }).values() as Float32Array);
  bn.weight?.data.set(rand([c], { low: 0.5, high: 1.5, generator: g }).values());
  bn.bias?.data.set(rand([c], { low: -0.2, high: 0.2, generator: g }).values());
  return bn;
}

/** A weighted layer, then the BatchNorm and ReLU the table lets fuse into it. */
function weighted(
  layer: (g: Generator) => Module,
  bn: (() => BatchNorm1d | BatchNorm2d) | null,
  g: Generator,
  cap: OpCapability,
): { parts: Record<string, Module>; body: (p: Parts, x: Tensor) => Tensor } {
  const parts: Record<string, Module> = { layer: layer(g) };
  if (bn && fuses(cap, 'BatchNormalization')) parts.bn = withStats(bn(), g);
  if (fuses(cap, 'Relu')) parts.relu = new ReLU();
  return {
    parts,
    body: (p, x) => {
      let y = callModule(p.layer!, x);
      if (p.bn) y = callModule(p.bn, y);
      if (p.relu) y = callModule(p.relu, y);
      return y;
    },
  };
}

const fn = (f: (x: Tensor) => Tensor) => () => ({ body: (_: unknown, x: Tensor) => f(x) });
const mod = (m: () => Module) => () => ({ parts: { op: m() }, body: (p: Parts, x: Tensor) => callModule(p.op!, x) });

const IMG = [2, 3, 8, 8];
/** Channels picked by the Gather probe: reordered, one twice (a negative index counts from the end). */
const GATHER_INDICES = new T.Tensor({ data: Int32Array.of(2, 0, -3, 1), shape: [4], dtype: 'int32' });

/**
 * The probe model of every op @qtk/testkit knows, keyed by capability-table op name. Shapes, ranges and
 * parameters are those of the conversion tests in packages/core (convert-*.test.ts), whose bounds the
 * tolerance table repeats.
 */
export const OP_PROBES: Readonly<Record<string, OpProbe>> = {
  Conv: normal('Conv2d 3→4 3×3 (+ BatchNorm2d, ReLU where fusable)', IMG, (g, cap) =>
    weighted(
      (gen) => new Conv2d(3, 4, 3, { padding: 1, generator: gen }),
      () => new BatchNorm2d(4),
      g,
      cap,
    ),
  ),
  ConvTranspose: normal('ConvTranspose2d 3→4 3×3 stride 2 (+ BatchNorm2d, ReLU where fusable)', IMG, (g, cap) =>
    weighted(
      (gen) => new ConvTranspose2d(3, 4, 3, { stride: 2, padding: 1, generator: gen }),
      () => new BatchNorm2d(4),
      g,
      cap,
    ),
  ),
  Gemm: normal('Linear 12→8 (+ BatchNorm1d, ReLU where fusable)', [6, 12], (g, cap) =>
    weighted(
      (gen) => new Linear(12, 8, { generator: gen }),
      () => new BatchNorm1d(8),
      g,
      cap,
    ),
  ),
  MatMul: binary('matmul(a, bᵀ) of [2, 4, 3] operands', (a, b) => T.matmul(a, T.transpose(b, 1, 2))),
  Add: binary('add(a, b)', (a, b) => T.add(a, b)),
  Sub: binary('sub(a, b)', (a, b) => T.sub(a, b)),
  Mul: binary('mul(a, b)', (a, b) => T.mul(a, b)),
  Concat: binary('cat([a, b], 1)', (a, b) => T.cat([a, b], 1)),
  ReduceMean: normal(
    'mean(x, 1) over the channels',
    [2, 4, 3],
    fn((x) => T.mean(x, 1)),
    7,
  ),
  ReduceSum: normal(
    'sum(x, 2)',
    [2, 4, 3],
    fn((x) => T.sum(x, 2)),
  ),
  Max: binary('maximum(a, b)', (a, b) => T.maximum(a, b)),
  Min: binary('minimum(a, b)', (a, b) => T.minimum(a, b)),
  Clip: normal(
    'clamp(x, -2, 3.3)',
    [2, 4, 3],
    fn((x) => T.clamp(x, -2, 3.3)),
    7,
  ),
  Abs: normal(
    'abs(x)',
    [2, 4, 3],
    fn((x) => T.abs(x)),
  ),
  Equal: binary('eq(a, a)', (a) => T.eq(a, a), true),
  Greater: binary('gt(a, b)', (a, b) => T.gt(a, b), true),
  Less: binary('lt(a, b)', (a, b) => T.lt(a, b), true),
  GreaterOrEqual: binary('ge(a, b)', (a, b) => T.ge(a, b), true),
  LessOrEqual: binary('le(a, b)', (a, b) => T.le(a, b), true),
  Split: normal(
    'split(x, [1, 2], 1)[1]',
    IMG,
    fn((x) => T.split(x, [1, 2], 1)[1]!),
  ),
  Exp: uniform('exp(x), x in [-6, 2)', -6, 2, () => (x: Tensor) => T.exp(x)),
  Erf: uniform('erf(x), x in [-3, 3)', -3, 3, () => (x: Tensor) => T.erf(x)),
  // a position encoding's argument: a few periods
  Sin: uniform('sin(x), x in [-8, 8)', -8, 8, () => (x: Tensor) => T.sin(x)),
  Cos: uniform('cos(x), x in [-8, 8)', -8, 8, () => (x: Tensor) => T.cos(x)),
  Sigmoid: uniform('Sigmoid, x in [-8, 8)', -8, 8, () => new Sigmoid()),
  Tanh: uniform('Tanh, x in [-4, 4)', -4, 4, () => new Tanh()),
  Silu: uniform('SiLU, x in [-8, 8)', -8, 8, () => new SiLU()),
  Gelu: uniform('GELU, x in [-6, 6)', -6, 6, () => new GELU()),
  Reciprocal: uniform('reciprocal(x), x in [0.1, 8)', 0.1, 8, () => (x: Tensor) => T.reciprocal(x)),
  Sqrt: uniform('sqrt(x), x in [0, 16)', 0, 16, () => (x: Tensor) => T.sqrt(x)),
  Rsqrt: uniform('x.rsqrt(), x in [0.05, 16)', 0.05, 16, () => (x: Tensor) => x.rsqrt()),
  Log: uniform('log(x), x in [0.01, 16)', 0.01, 16, () => (x: Tensor) => T.log(x)),
  Pow: uniform('pow(x, 2), x in [-4, 4)', -4, 4, () => (x: Tensor) => T.pow(x, 2)),
  Softplus: uniform('Softplus(beta 2), x in [-8, 8)', -8, 8, () => new Softplus({ beta: 2 })),
  Elu: uniform('ELU(0.5), x in [-8, 8)', -8, 8, () => new ELU(0.5)),
  LeakyRelu: uniform('LeakyReLU(0.1), x in [-8, 8)', -8, 8, () => new LeakyReLU(0.1)),
  PRelu: uniform('PReLU over 4 channels (slopes 0.25, -0.5, 0.01, 1.5), x in [-6, 6)', -6, 6, () => {
    const p = new PReLU({ numParameters: 4 });
    p.weight.data.set([0.25, -0.5, 0.01, 1.5]);
    return p;
  }),
  HardSigmoid: uniform('Hardsigmoid, x in [-4, 4)', -4, 4, () => new Hardsigmoid()),
  HardSwish: uniform('Hardswish, x in [-6, 6)', -6, 6, () => new Hardswish()),
  Softmax: normal(
    'Softmax(-1) over 10 elements',
    [16, 10],
    mod(() => new Softmax(-1)),
    3,
  ),
  LayerNormalization: normal(
    'LayerNorm(32), affine',
    [2, 8, 32],
    (g) => {
      const ln = new LayerNorm(32);
      ln.weight!.data.set(randn([32], { std: 0.5, mean: 1, generator: g }).values());
      ln.bias!.data.set(randn([32], { std: 0.3, generator: g }).values());
      return { parts: { op: ln }, body: (p: Parts, x: Tensor) => callModule(p.op!, x) };
    },
    2,
  ),
  Div: {
    model: 'div(x, y), y in [0.25, 4)',
    build: ({ generator: g }) => ({
      model: new BinaryProbeNet((x, y) => T.div(x, y)).eval(),
      batches: batchesOf(() => [
        randn([8, 32], { generator: g }).mul(2),
        rand([8, 32], { low: 0.25, high: 4, generator: g }),
      ]),
    }),
  },
  AveragePool: normal(
    'AvgPool2d 3×3 stride 2 pad 1',
    [2, 3, 9, 9],
    mod(() => new AvgPool2d(3, { stride: 2, padding: 1 })),
  ),
  AdaptiveAveragePool: normal(
    'AdaptiveAvgPool2d(1)',
    [2, 3, 7, 7],
    mod(() => new AdaptiveAvgPool2d(1)),
  ),
  MaxPool: normal(
    'MaxPool2d 3×3 stride 2 pad 1',
    IMG,
    mod(() => new MaxPool2d(3, { stride: 2, padding: 1 })),
  ),
  Resize: normal(
    'bilinear interpolate to 11×13',
    IMG,
    fn((x) => T.interpolate(x, { size: [11, 13], mode: 'bilinear' })),
  ),
  Pad: normal(
    'zero pad [1, 2, 0, 1]',
    IMG,
    fn((x) => T.pad(x, [1, 2, 0, 1])),
  ),
  DepthToSpace: normal(
    'PixelShuffle(2)',
    [2, 4, 4, 4],
    mod(() => new PixelShuffle(2)),
  ),
  ChannelShuffle: normal(
    'ChannelShuffle(3) over 6 channels',
    [2, 6, 4, 4],
    mod(() => new ChannelShuffle(3)),
  ),
  Reshape: normal(
    'reshape(x, [2, 3, 64])',
    IMG,
    fn((x) => T.reshape(x, [2, 3, 64])),
  ),
  Flatten: normal(
    'Flatten',
    IMG,
    mod(() => new Flatten()),
  ),
  // no table lists a lone BatchNorm: the agreement suite walks it (converted as a depthwise 1×1 Conv)
  BatchNormalization: normal('BatchNorm2d(3) alone', IMG, (g) => ({
    parts: { op: withStats(new BatchNorm2d(3), g) },
    body: (p: Parts, x: Tensor) => callModule(p.op!, x),
  })),
  Relu: normal(
    'ReLU',
    IMG,
    mod(() => new ReLU()),
  ),
  Transpose: normal(
    'transpose(x, 2, 3)',
    IMG,
    fn((x) => T.transpose(x, 2, 3)),
  ),
  Expand: normal(
    'expand(x, [2, 3, 8, 8]) of [2, 1, 8, 8]',
    [2, 1, 8, 8],
    fn((x) => T.expand(x, [2, 3, 8, 8])),
  ),
  Slice: normal(
    'slice(x, axis 3, 1:7:2)',
    IMG,
    fn((x) => T.slice(x, { axis: 3, start: 1, end: 7, step: 2 })),
  ),
  // only an ONNX import produces it: the importer's function, called as an imported graph calls it
  Gather: normal(
    'Gather(x, indices [2, 0, -3, 1], axis 1), as the ONNX importer writes it',
    IMG,
    fn((x) => onnxGather(x, GATHER_INDICES, 1)),
  ),
};
