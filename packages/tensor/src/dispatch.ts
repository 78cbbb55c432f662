import { GradNode, getGradient, isGradEnabled } from './autograd.js';
import { kernels, type Saved, type TensorKernel } from './registry.js';
import type { Tensor } from './tensor.js';
import { isProfiling, recordOp } from './op-profiler.js';

/**
 * Runs an op through the kernel registry and records it for autograd when any input
 * requires a gradient. Every tensor op in QTK goes through here.
 */
export function runOp<A>(op: string, inputs: Tensor[], attrs: A): Tensor[] {
  const spec = kernels.resolve<TensorKernel<A>>(op, inputs, attrs);
  const saved: Saved = {};
  let result: Tensor | Tensor[];
  if (isProfiling()) {
    const t0 = performance.now();
    result = spec.fn(inputs, attrs, saved);
    recordOp(op, 'forward', performance.now() - t0);
  } else {
    result = spec.fn(inputs, attrs, saved);
  }
  const outputs = Array.isArray(result) ? result : [result];
  if (isGradEnabled()) {
    let needs = false;
    for (const t of inputs) if (t.requiresGrad) needs = true;
    if (needs) {
      const fn = getGradient(op);
      if (fn) {
        const node = new GradNode(op, inputs, outputs, attrs, saved, fn);
        outputs.forEach((o, i) => {
          if (o.dtype === 'float32') {
            o.requiresGrad = true;
            o.gradFn = node;
            o.outputIndex = i;
          }
        });
      }
    }
  }
  return outputs;
}

/** `runOp` for single-output ops. */
export function run1<A>(op: string, inputs: Tensor[], attrs: A): Tensor {
  return runOp(op, inputs, attrs)[0]!;
}
