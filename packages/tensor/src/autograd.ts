import { AutogradError } from './errors.js';
import { Registry } from './named-registry.js';
import type { Saved } from './registry.js';
import type { Tensor } from './tensor.js';
import { isProfiling, recordOp } from './op-profiler.js';

// biome-ignore lint/suspicious/noExplicitAny: attributes differ per op; the registry and the tape erase their type
export interface GradContext<A = any> {
  inputs: readonly Tensor[];
  outputs: readonly Tensor[];
  attrs: A;
  saved: Saved;
}

/** Gradient of an op: given the gradients of its outputs (null where none flowed), the gradients of its inputs. */
// biome-ignore lint/suspicious/noExplicitAny: attributes differ per op; the registry and the tape erase their type
export type GradientFn<A = any> = (ctx: GradContext<A>, gradOutputs: (Tensor | null)[]) => (Tensor | null)[];

/** Gradients by op; registering the same function for an op again is a no-op. */
const gradients = new Registry<{ readonly op: string; readonly fn: GradientFn }>('gradient', {
  keyOf: (g) => g.op,
  same: (a, b) => a.fn === b.fn,
  howToRegister: 'registerGradient(op, fn)',
  conflictHint: (op) => `an op has one gradient; give the new kernel another op name than '${op}'`,
});

export function registerGradient<A>(op: string, fn: GradientFn<A>): void {
  gradients.register({ op, fn: fn as GradientFn });
}

export function getGradient(op: string): GradientFn | undefined {
  return gradients.has(op) ? gradients.get(op).fn : undefined;
}

/** One recorded op application in the autograd graph. */
export class GradNode {
  constructor(
    readonly op: string,
    readonly inputs: readonly Tensor[],
    public outputs: readonly Tensor[],
    readonly attrs: unknown,
    public saved: Saved,
    readonly fn: GradientFn,
  ) {}
}

let gradEnabled = true;

export function isGradEnabled(): boolean {
  return gradEnabled;
}

/** Runs `fn` with gradient recording off (evaluation, optimizer steps, observers). */
export function noGrad<T>(fn: () => T): T {
  const prev = gradEnabled;
  gradEnabled = false;
  try {
    return fn();
  } finally {
    gradEnabled = prev;
  }
}

export function setGradEnabled(enabled: boolean): void {
  gradEnabled = enabled;
}

// Late-bound to avoid an import cycle with the op modules.
let addForAccumulate: ((a: Tensor, b: Tensor) => Tensor) | null = null;
let onesLikeForSeed: ((t: Tensor) => Tensor) | null = null;
export function bindAutogradHelpers(add: (a: Tensor, b: Tensor) => Tensor, onesLike: (t: Tensor) => Tensor): void {
  addForAccumulate = add;
  onesLikeForSeed = onesLike;
}

function accumulate(prev: Tensor | null | undefined, g: Tensor): Tensor {
  return prev ? addForAccumulate!(prev, g) : g;
}

/** Nodes reachable from `root`, each after all nodes that consume its outputs. */
function reverseTopological(root: GradNode): GradNode[] {
  const order: GradNode[] = [];
  const visited = new Set<GradNode>();
  const stack: [GradNode, number][] = [[root, 0]];
  visited.add(root);
  while (stack.length) {
    const top = stack[stack.length - 1]!;
    const [node, i] = top;
    if (i < node.inputs.length) {
      top[1]++;
      const child = node.inputs[i]!.gradFn;
      if (child && !visited.has(child)) {
        visited.add(child);
        stack.push([child, 0]);
      }
    } else {
      stack.pop();
      order.push(node);
    }
  }
  return order.reverse();
}

export interface BackwardOptions {
  /** Keep saved tensors so backward can run again through the same graph. */
  retainGraph?: boolean;
}

/** Reverse-mode differentiation from `root`; gradients accumulate into `.grad` of leaves that require them. */
export function backward(root: Tensor, gradient?: Tensor, options: BackwardOptions = {}): void {
  if (!root.requiresGrad) {
    throw new AutogradError(
      'backward() on a tensor that does not require grad: no input of its computation has requiresGrad set',
    );
  }
  let seed = gradient;
  if (!seed) {
    if (root.size !== 1) {
      throw new AutogradError(
        `backward() without a gradient needs a scalar, got shape [${root.shape.join(', ')}]; pass a gradient of the same shape`,
      );
    }
    seed = onesLikeForSeed!(root);
  }
  if (!root.gradFn) {
    root.grad = accumulate(root.grad, seed);
    return;
  }
  const pending = new Map<GradNode, (Tensor | null)[]>();
  pending.set(
    root.gradFn,
    Object.assign(new Array(root.gradFn.outputs.length).fill(null), { [root.outputIndex]: seed }),
  );
  noGrad(() => {
    for (const node of reverseTopological(root.gradFn!)) {
      const gOut = pending.get(node);
      pending.delete(node);
      if (!gOut || gOut.every((g) => g === null)) continue;
      const t0 = isProfiling() ? performance.now() : 0;
      const gIn = node.fn({ inputs: node.inputs, outputs: node.outputs, attrs: node.attrs, saved: node.saved }, gOut);
      if (t0) recordOp(node.op, 'backward', performance.now() - t0);
      if (!options.retainGraph) node.saved = {};
      for (let i = 0; i < node.inputs.length; i++) {
        const x = node.inputs[i]!;
        const g = gIn[i];
        if (!g || !x.requiresGrad) continue;
        if (x.gradFn) {
          let slot = pending.get(x.gradFn);
          if (!slot) {
            slot = new Array(x.gradFn.outputs.length).fill(null);
            pending.set(x.gradFn, slot);
          }
          slot[x.outputIndex] = accumulate(slot[x.outputIndex], g);
        } else {
          x.grad = accumulate(x.grad, g);
        }
      }
    }
  });
}
