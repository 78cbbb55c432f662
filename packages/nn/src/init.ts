import { defaultGenerator, type Generator, InvalidArgumentError, type Tensor } from '@qtk/tensor';

// In-place initialisers after torch.nn.init. They write into a contiguous float tensor's storage
// and draw from the given generator (the shared default one, reseeded by `manualSeed`, otherwise).

export type Nonlinearity =
  | 'linear'
  | 'conv1d'
  | 'conv2d'
  | 'conv3d'
  | 'sigmoid'
  | 'tanh'
  | 'relu'
  | 'leaky_relu'
  | 'selu';

/** Recommended gain for a nonlinearity (torch.nn.init.calculate_gain). */
export function calculateGain(nonlinearity: Nonlinearity, param?: number): number {
  switch (nonlinearity) {
    case 'linear':
    case 'conv1d':
    case 'conv2d':
    case 'conv3d':
    case 'sigmoid':
      return 1;
    case 'tanh':
      return 5 / 3;
    case 'relu':
      return Math.SQRT2;
    case 'leaky_relu': {
      const slope = param ?? 0.01;
      return Math.sqrt(2 / (1 + slope * slope));
    }
    case 'selu':
      return 3 / 4;
    default:
      throw new InvalidArgumentError(`calculateGain: unknown nonlinearity '${String(nonlinearity)}'`);
  }
}

/** fan_in = size(1) * receptive field, fan_out = size(0) * receptive field (PyTorch's convention). */
export function calculateFanInAndFanOut(t: Tensor): { fanIn: number; fanOut: number } {
  if (t.ndim < 2) {
    throw new InvalidArgumentError(
      `calculateFanInAndFanOut: needs a tensor with at least 2 dimensions, got [${t.shape.join(', ')}]`,
    );
  }
  let receptive = 1;
  for (let i = 2; i < t.ndim; i++) receptive *= t.shape[i]!;
  return { fanIn: t.shape[1]! * receptive, fanOut: t.shape[0]! * receptive };
}

function storage(t: Tensor, who: string): Float32Array {
  if (t.dtype !== 'float32' || !t.isContiguous()) {
    throw new InvalidArgumentError(`${who}: needs a contiguous float32 tensor, got ${t.dtype} [${t.shape.join(', ')}]`);
  }
  return (t.data as Float32Array).subarray(t.offset, t.offset + t.size);
}

export function uniform_(t: Tensor, low = 0, high = 1, generator: Generator = defaultGenerator): Tensor {
  const d = storage(t, 'uniform_');
  for (let i = 0; i < d.length; i++) d[i] = low + (high - low) * generator.uniform();
  return t;
}

export function normal_(t: Tensor, mean = 0, std = 1, generator: Generator = defaultGenerator): Tensor {
  const d = storage(t, 'normal_');
  for (let i = 0; i < d.length; i++) d[i] = mean + std * generator.normal();
  return t;
}

export function constant_(t: Tensor, value: number): Tensor {
  storage(t, 'constant_').fill(value);
  return t;
}

export const zeros_ = (t: Tensor): Tensor => constant_(t, 0);
export const ones_ = (t: Tensor): Tensor => constant_(t, 1);

export interface KaimingOptions {
  /** Negative slope of the rectifier after this layer (only for 'leaky_relu'). */
  a?: number;
  mode?: 'fanIn' | 'fanOut';
  nonlinearity?: Nonlinearity;
  generator?: Generator;
}

/** U(-bound, bound) with bound = gain * sqrt(3 / fan); PyTorch's layers use a = sqrt(5), giving 1/sqrt(fan_in). */
export function kaimingUniform_(t: Tensor, options: KaimingOptions = {}): Tensor {
  const { a = 0, mode = 'fanIn', nonlinearity = 'leaky_relu', generator } = options;
  const { fanIn, fanOut } = calculateFanInAndFanOut(t);
  const fan = mode === 'fanIn' ? fanIn : fanOut;
  const bound = fan === 0 ? 0 : calculateGain(nonlinearity, a) * Math.sqrt(3 / fan);
  return uniform_(t, -bound, bound, generator);
}

export function kaimingNormal_(t: Tensor, options: KaimingOptions = {}): Tensor {
  const { a = 0, mode = 'fanIn', nonlinearity = 'leaky_relu', generator } = options;
  const { fanIn, fanOut } = calculateFanInAndFanOut(t);
  const fan = mode === 'fanIn' ? fanIn : fanOut;
  const std = fan === 0 ? 0 : calculateGain(nonlinearity, a) / Math.sqrt(fan);
  return normal_(t, 0, std, generator);
}

export function xavierUniform_(t: Tensor, gain = 1, generator?: Generator): Tensor {
  const { fanIn, fanOut } = calculateFanInAndFanOut(t);
  const bound = gain * Math.sqrt(6 / (fanIn + fanOut));
  return uniform_(t, -bound, bound, generator);
}

export function xavierNormal_(t: Tensor, gain = 1, generator?: Generator): Tensor {
  const { fanIn, fanOut } = calculateFanInAndFanOut(t);
  return normal_(t, 0, gain * Math.sqrt(2 / (fanIn + fanOut)), generator);
}

let skipping = 0;

/**
 * Runs `make` with the random initialisation of Linear and Conv layers turned off (PyTorch's
 * `skip_init`): their weights and biases stay zero, for a caller that sets them right after (an
 * importer). Nothing is drawn from any generator, so the random stream is the same as if `make` had
 * not run.
 */
export function skipInit<T>(make: () => T): T {
  skipping++;
  try {
    return make();
  } finally {
    skipping--;
  }
}

/**
 * PyTorch's `reset_parameters` for Linear and Conv: kaiming_uniform(a = sqrt 5) on the weight,
 * bias ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)). Weight is drawn first, then bias.
 */
export function resetLinearLike(weight: Tensor, bias: Tensor | null, generator?: Generator): void {
  if (skipping > 0) return;
  kaimingUniform_(weight, { a: Math.sqrt(5), generator });
  if (bias) {
    const { fanIn } = calculateFanInAndFanOut(weight);
    const bound = fanIn > 0 ? 1 / Math.sqrt(fanIn) : 0;
    uniform_(bias, -bound, bound, generator);
  }
}
