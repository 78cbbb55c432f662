// The ops QTK knows, each once, by its ONNX name. Which modules, functions and tensor methods
// implement an op is registered by the package that owns them (op-catalog.ts); the definitions
// themselves are static so that capability tables, defined when a march package loads, can be
// checked against them before any implementation is registered.

/** What an op can be inside a fused conv module: the layer, the folded norm, the add, the activation. */
export type FusionRole = 'base' | 'bn' | 'add' | 'activation';

export interface OpDefinition {
  /** ONNX operator name ('Conv', 'Gemm', 'Relu'); a few QTK-only ops ('Silu', 'ChannelShuffle', 'AdaptiveAveragePool') have no ONNX equivalent. */
  readonly name: string;
  /** Attributes an implementation reports for the op (capability-table constraints read these names). */
  readonly attributes: readonly string[];
  /**
   * Whether the op's output is a new value that needs its own activation scale (prepare gives it an
   * activation fake-quant); false for ops that move or select integers (Relu, MaxPool, Reshape).
   */
  readonly ownOutputScale: boolean;
  /** Roles the op can take in a fused conv module (fusion-patterns in @qtk/fusion). */
  readonly fusionRoles: readonly FusionRole[];
}

const CONV_ATTRS = ['spatialDims', 'kernelShape', 'stride', 'padding', 'dilation', 'groups'] as const;

type Row = readonly [
  name: string,
  ownOutputScale: boolean,
  attributes?: readonly string[],
  roles?: readonly FusionRole[],
];

// [name, ownOutputScale, attributes, fusion roles]
const ROWS: readonly Row[] = [
  // layers
  ['Conv', true, CONV_ATTRS, ['base']],
  ['ConvTranspose', true, [...CONV_ATTRS, 'outputPadding'], ['base']],
  ['Gemm', true, [], ['base']],
  ['MatMul', true],
  ['BatchNormalization', true, [], ['bn']],
  ['LayerNormalization', true, ['axis']],
  ['InstanceNormalization', true],
  // elementwise arithmetic
  ['Add', true, [], ['add']],
  ['Sub', true],
  ['Mul', true],
  ['Div', true],
  ['Max', true],
  ['Min', true],
  ['Mod', true],
  ['Abs', false],
  ['Neg', false],
  ['Round', false],
  ['Floor', false],
  ['Ceil', false],
  ['Sign', false],
  ['Where', false],
  ['Equal', false],
  ['Greater', false],
  ['Less', false],
  ['GreaterOrEqual', false],
  ['LessOrEqual', false],
  ['Not', false],
  ['And', false],
  ['Or', false],
  ['Xor', false],
  // activations and other nonlinear functions
  ['Relu', false, [], ['activation']],
  ['Clip', false, ['min', 'max'], ['activation']],
  ['LeakyRelu', true, ['alpha']],
  ['PRelu', true],
  ['Sigmoid', true],
  ['Tanh', true],
  ['Silu', true],
  ['Gelu', true, ['approximate']],
  ['Elu', true, ['alpha']],
  // SELU keeps its input's scale, as QTK's prepare always did (it is tabulated by no march)
  ['Selu', false],
  ['Softplus', true, ['beta', 'threshold']],
  ['HardSigmoid', true],
  ['HardSwish', true],
  ['Softmax', true, ['axis']],
  ['LogSoftmax', false, ['axis']],
  ['Exp', true],
  ['Log', true],
  ['Sqrt', true],
  ['Rsqrt', true],
  ['Reciprocal', true],
  ['Pow', true],
  ['Sin', true],
  ['Cos', true],
  ['Erf', true],
  // reductions
  ['ReduceMean', true, ['axes', 'keepdims']],
  ['ReduceSum', true, ['axes', 'keepdims']],
  ['ReduceMax', false, ['axes', 'keepdims']],
  ['ReduceMin', false, ['axes', 'keepdims']],
  ['ArgMax', false, ['axis', 'keepdims']],
  ['ArgMin', false, ['axis', 'keepdims']],
  ['TopK', false],
  // pooling and resizing
  ['MaxPool', false, ['kernelShape', 'stride', 'padding']],
  ['GlobalMaxPool', false],
  ['AveragePool', true, ['kernelSize', 'stride', 'padding']],
  ['AdaptiveAveragePool', true, ['outputSize']],
  ['Resize', true, ['mode']],
  // data movement
  ['Concat', true, ['axis']],
  ['Split', false, ['axis']],
  ['Slice', false],
  ['Gather', false, ['axis']],
  ['ScatterND', false],
  ['Expand', false],
  ['Tile', false],
  ['Reshape', false],
  ['Flatten', false, ['axis']],
  ['Squeeze', false],
  ['Unsqueeze', false],
  ['Transpose', false],
  ['Pad', false, ['mode']],
  ['DepthToSpace', false, ['blocksize']],
  ['SpaceToDepth', false, ['blocksize']],
  ['ChannelShuffle', false, ['groups']],
  ['Identity', false],
  ['Dropout', false],
  ['Cast', false],
];

/** Every op of the catalog, in a stable order (layers, arithmetic, nonlinear, reductions, pooling, data movement). */
export const OP_DEFINITIONS: readonly OpDefinition[] = ROWS.map(([name, ownOutputScale, attributes = [], roles = []]) =>
  Object.freeze({
    name,
    ownOutputScale,
    attributes: Object.freeze([...attributes]),
    fusionRoles: Object.freeze([...roles]),
  }),
);
