import { registerGradient } from '../autograd.js';
import { run1 } from '../dispatch.js';
import { kernels, registerKernel, type Saved, type TensorKernel } from '../registry.js';
import { shapesEqual } from '../shape.js';
import type { Tensor } from '../tensor.js';
import { add } from './binary.js';
import { relu6 } from './activations.js';
import { convGradients, convPlan, convSetup, type ConvAttrs, type ConvOptions } from './conv.js';
import { relu, type ReluBackwardKernel } from './unary.js';
import { f32, make } from './util.js';
import { reshape } from './view.js';

// ConvEpilogue: a convolution whose output goes straight through an add of a same-shaped tensor and a
// ReLU or ReLU6, the pattern fused modules (conv + BN + add + activation) run on every forward. One op,
// so the wasm kernel applies the add and the activation to each image's output while it is in cache
// instead of in two more passes over fresh arrays. Same values as conv, add, then the activation, in that
// order (wasm kernel included); the gradient is the activation's, then the conv's and the add's.

export type ConvActivation = 'relu' | 'relu6';

export interface ConvEpilogueAttrs extends ConvAttrs {
  /** Inputs are [x, w, bias?, other?]: whether the bias and the added tensor are there. */
  hasBias: boolean;
  withAdd: boolean;
  activation: ConvActivation | null;
}

export interface ConvEpilogue {
  /** Added to the conv's output (same shape). */
  other?: Tensor | null;
  activation?: ConvActivation | null;
}

function operands(inputs: readonly Tensor[], a: ConvEpilogueAttrs) {
  const [x, w] = inputs;
  const b = a.hasBias ? inputs[2] : undefined;
  const other = a.withAdd ? inputs[a.hasBias ? 3 : 2] : undefined;
  return { x: x!, w: w!, b, other };
}

// The reference: the cpu kernels of Conv, Add and Relu / Relu6, one after the other.
registerKernel<TensorKernel<ConvEpilogueAttrs>>({
  op: 'ConvEpilogue',
  backend: 'cpu',
  fn: (inputs, a, saved: Saved) => {
    const { x, w, b, other } = operands(inputs, a);
    const cpu = (op: string) => kernels.kernelOn<TensorKernel<unknown>>(op, 'cpu')!.fn;
    let y = cpu('Conv')(b ? [x, w, b] : [x, w], a, saved) as Tensor;
    if (other) y = cpu('Add')([y, other], {}, {}) as Tensor;
    if (a.activation) y = cpu(a.activation === 'relu' ? 'Relu' : 'Relu6')([y], {}, {}) as Tensor;
    return y;
  },
});

registerGradient<ConvEpilogueAttrs>('ConvEpilogue', ({ inputs, outputs: [y], attrs, saved }, [g]) => {
  const { x, w, b, other } = operands(inputs, attrs);
  let gy = g!;
  if (attrs.activation === 'relu') {
    const args = [y!, g!];
    gy = kernels.resolve<ReluBackwardKernel>('ReluBackward', args, {}).fn(args, {});
  } else if (attrs.activation === 'relu6') {
    // Relu6's gradient, 1 strictly inside (0, 6), read off the output: y is in (0, 6) exactly when its input was
    const yv = f32(y!);
    const gv = f32(g!);
    const out = new Float32Array(yv.length);
    for (let i = 0; i < yv.length; i++) out[i] = gv[i]! * (yv[i]! > 0 && yv[i]! < 6 ? 1 : 0);
    gy = make(out, y!.shape);
  }
  const [dx, dw, db] = convGradients(x, w, b, attrs, saved, gy);
  const grads: (Tensor | null)[] = [dx!, dw!];
  if (b) grads.push(db!);
  if (other) grads.push(other.requiresGrad ? gy : null);
  return grads;
});

/**
 * activation(conv(x, weight, bias) + other) as one op, with the rank taken from the weight (1-d to 3-d).
 * Equal to running conv1d/2d/3d, add and relu / relu6 one after the other, which is what it does when
 * `other` does not have the conv output's exact shape (broadcasting) or is not float32.
 */
export function convWithEpilogue(
  x: Tensor,
  weight: Tensor,
  bias: Tensor | null | undefined,
  options: ConvOptions,
  epilogue: ConvEpilogue,
): Tensor {
  const r = weight.ndim - 2;
  const { xb, unbatched, attrs } = convSetup(`conv${r}d`, r, x, weight, bias, options);
  const activation = epilogue.activation ?? null;
  let other = epilogue.other ?? null;
  const outShape = (y: Tensor) => (unbatched ? reshape(y, y.shape.slice(1)) : y);
  if (other) {
    const expected = [xb.shape[0]!, weight.shape[0]!, ...convPlan(xb, weight, attrs).out];
    const otherB = unbatched && other.ndim === expected.length - 1 ? reshape(other, [1, ...other.shape]) : other;
    if (other.dtype !== 'float32' || !shapesEqual(otherB.shape, expected)) {
      // broadcasting (or another dtype): the separate ops
      let y = outShape(run1<ConvAttrs>('Conv', bias ? [xb, weight, bias] : [xb, weight], attrs));
      y = add(y, other);
      return activation === 'relu' ? relu(y) : activation === 'relu6' ? relu6(y) : y;
    }
    other = otherB;
  }
  const inputs = [xb, weight];
  if (bias) inputs.push(bias);
  if (other) inputs.push(other);
  const a: ConvEpilogueAttrs = { ...attrs, hasBias: !!bias, withAdd: !!other, activation };
  return outShape(run1<ConvEpilogueAttrs>('ConvEpilogue', inputs, a));
}
