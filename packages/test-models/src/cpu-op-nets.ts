// Small networks with ops a march lacks: in the middle, at the ends, in a row of alternating segments,
// and functional ones inside a module's forward (the hybrid partition's and the profiler's tests).
import * as nn from '@qtk/nn';
import { Generator, rand, selu, type Tensor, tensor } from '@qtk/tensor';
import { call, randomInputs } from './inputs.js';

/** conv+relu → hardswish → conv → hardsigmoid → conv → SELU → conv → average pool → linear: three ops bernoulli2 lacks, in the middle. */
export class MiddleOpsNet extends nn.Module {
  readonly quant = new nn.QuantStub();
  readonly conv0: nn.Conv2d;
  readonly relu0 = new nn.ReLU();
  readonly hswish = new nn.Hardswish();
  readonly conv1: nn.Conv2d;
  readonly hsigmoid = new nn.Hardsigmoid();
  readonly conv2: nn.Conv2d;
  readonly selu = new nn.SELU();
  readonly conv3: nn.Conv2d;
  readonly pool: nn.AvgPool2d;
  readonly flatten = new nn.Flatten();
  readonly fc: nn.Linear;
  readonly dequant = new nn.DeQuantStub();
  /** `poolKernel` 8 is past bernoulli2's average-pool limit (7); 1 hands every position to the linear layer. */
  constructor(seed = 3, poolKernel = 4) {
    super();
    const g = new Generator(seed);
    this.pool = new nn.AvgPool2d(poolKernel);
    this.conv0 = new nn.Conv2d(3, 8, 3, { padding: 1, generator: g });
    this.conv1 = new nn.Conv2d(8, 8, 3, { padding: 1, generator: g });
    this.conv2 = new nn.Conv2d(8, 8, 1, { generator: g });
    this.conv3 = new nn.Conv2d(8, 8, 1, { generator: g });
    this.fc = new nn.Linear(8 * (8 / poolKernel) ** 2, 10, { generator: g });
  }
  forward(x: Tensor): Tensor {
    let y = this.relu0.call(this.conv0.call(this.quant.call(x)));
    y = this.conv1.call(this.hswish.call(y));
    y = this.conv2.call(this.hsigmoid.call(y));
    y = this.conv3.call(this.selu.call(y));
    return this.dequant.call(this.fc.call(this.flatten.call(this.pool.call(y))));
  }
}

/**
 * No QuantStub and no DeQuantStub: SELU first, hardswish last, convs and a functional add between (bernoulli2
 * has neither SELU nor hardswish). The hybrid tests build it with seed 5, the profiler's with seed 29.
 */
export class CpuEndsNet extends nn.Module {
  readonly selu = new nn.SELU();
  readonly conv0: nn.Conv2d;
  readonly relu = new nn.ReLU();
  readonly conv1: nn.Conv2d;
  readonly hswish = new nn.Hardswish();
  constructor(seed = 5) {
    super();
    const g = new Generator(seed);
    this.conv0 = new nn.Conv2d(3, 4, 3, { padding: 1, generator: g });
    this.conv1 = new nn.Conv2d(4, 4, 1, { generator: g });
  }
  forward(x: Tensor): Tensor {
    const a = this.relu.call(this.conv0.call(this.selu.call(x)));
    return this.hswish.call(this.conv1.call(a).add(a));
  }
}

/** quant → (conv → hardswish) × 3 → conv → dequant: seven segments, BPU and CPU in turn. */
export class AlternatingNet extends nn.Module {
  readonly quant = new nn.QuantStub();
  readonly conv0: nn.Conv2d;
  readonly act0 = new nn.Hardswish();
  readonly conv1: nn.Conv2d;
  readonly act1 = new nn.Hardswish();
  readonly conv2: nn.Conv2d;
  readonly act2 = new nn.Hardswish();
  readonly conv3: nn.Conv2d;
  readonly dequant = new nn.DeQuantStub();
  constructor(seed = 7) {
    super();
    const g = new Generator(seed);
    this.conv0 = new nn.Conv2d(3, 4, 1, { generator: g });
    this.conv1 = new nn.Conv2d(4, 4, 1, { generator: g });
    this.conv2 = new nn.Conv2d(4, 4, 1, { generator: g });
    this.conv3 = new nn.Conv2d(4, 4, 1, { generator: g });
  }
  forward(x: Tensor): Tensor {
    let y = this.act0.call(this.conv0.call(this.quant.call(x)));
    y = this.act1.call(this.conv1.call(y));
    y = this.act2.call(this.conv2.call(y));
    return this.dequant.call(this.conv3.call(y));
  }
}

/**
 * A ten-class task for MiddleOpsNet(seed, 1): ten random prototype images; the linear layer's row
 * for class c is the float features of prototype c (centred over the classes, unit length, with the bias that centres the input's features), so
 * the float model tells noisy copies of the prototypes apart (noise uniform in [-2.5, 2.5]). Returns the labelled batch maker.
 */
export function prototypeTask(net: MiddleOpsNet): (seed: number, n: number) => { x: Tensor; labels: number[] } {
  const protos = randomInputs(200, 10);
  let features: Tensor | null = null;
  const h = net.flatten.registerForwardHook((_m, _a, out) => {
    features = out as Tensor;
  });
  call(net.eval(), protos);
  h.remove();
  const f = (features as unknown as Tensor).values();
  const width = f.length / 10;
  const w = new Float32Array(f.length);
  const mean = new Float32Array(width);
  for (let j = 0; j < width; j++) {
    for (let c = 0; c < 10; c++) mean[j]! += f[c * width + j]! / 10;
    for (let c = 0; c < 10; c++) w[c * width + j] = f[c * width + j]! - mean[j]!;
  }
  const bias = new Float32Array(10);
  for (let c = 0; c < 10; c++) {
    const row = w.subarray(c * width, (c + 1) * width);
    const norm = Math.hypot(...row);
    for (let j = 0; j < width; j++) {
      row[j] = row[j]! / norm;
      bias[c]! -= row[j]! * mean[j]!; // logit c = <row c, features - mean features>
    }
  }
  net.fc.weight.values().set(w);
  net.fc.bias!.values().set(bias);
  const p = protos.values();
  const size = p.length / 10;
  return (seed, n) => {
    const noise = rand([n, 3, 8, 8], { generator: new Generator(seed) }).values();
    const labels = Array.from({ length: n }, (_, i) => i % 10);
    const x = new Float32Array(n * size);
    for (let i = 0; i < n; i++)
      for (let k = 0; k < size; k++) x[i * size + k] = p[labels[i]! * size + k]! + 5 * (noise[i * size + k]! - 0.5);
    return { x: tensor(x, [n, 3, 8, 8]), labels };
  };
}

/** A block whose forward calls the functional selu: traced through, its selu is a function node in its scope. */
export class SeluBlock extends nn.Module {
  forward(x: Tensor): Tensor {
    return selu(x);
  }
}

/** quant → conv0 → selu (function, in the model's forward) → conv1 → block (SeluBlock) → conv2 → dequant. */
export class FunctionalSeluNet extends nn.Module {
  readonly quant = new nn.QuantStub();
  readonly conv0: nn.Conv2d;
  readonly conv1: nn.Conv2d;
  readonly block = new SeluBlock();
  readonly conv2: nn.Conv2d;
  readonly dequant = new nn.DeQuantStub();
  constructor(seed = 9) {
    super();
    const g = new Generator(seed);
    this.conv0 = new nn.Conv2d(3, 3, 1, { generator: g });
    this.conv1 = new nn.Conv2d(3, 3, 1, { generator: g });
    this.conv2 = new nn.Conv2d(3, 3, 1, { generator: g });
  }
  forward(x: Tensor): Tensor {
    const y = this.conv1.call(selu(this.conv0.call(this.quant.call(x))));
    return this.dequant.call(this.conv2.call(this.block.call(y)));
  }
}
