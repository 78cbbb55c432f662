// Eager-mode fusion (horizon_plugin_pytorch's and PyTorch's fuse_modules): the user names each group
// of modules to fuse by path, as they run in forward; no tracing. The group's first layer becomes the
// fused module of its family (BatchNorm absorbed, as fuseFx does) and the others Identity, so the
// model's forward runs unchanged. A group with a FloatFunctional add puts the fused module at the
// add's path, where forward calls `add(x, other)` (the conv's output must be the add's first input).
import { FUSION_FAMILIES, fuseLayerWithBatchNorm, type AbsorbingLayer } from '@qtk/fusion';
import { FloatFunctional, Identity, Module, ReLU, ReLU6, deepCopy } from '@qtk/nn';
import { InvalidArgumentError, Tensor } from '@qtk/tensor';

export interface FuseModulesOptions {
  /** Edit `model` itself instead of a copy (default false, as PyTorch's `inplace=False`). */
  inplace?: boolean;
  /**
   * One tensor per model input: the float model and the fused one are run on them in eval mode and
   * must agree (catches a group that is not run in the order given, or an add whose first input is
   * not the conv's output).
   */
  exampleInputs?: Tensor | readonly Tensor[];
}

/**
 * Where a fused add runs: the user's forward calls `add(x, other)` on the module that was a
 * FloatFunctional, and it runs the fused conv-add(-ReLU) on them. The fused module is its child
 * `fused`, so prepareQat and convert swap it like any other layer.
 */
export class FusedAddSite extends Module {
  readonly fused: Module;

  constructor(fused: Module) {
    super();
    this.fused = fused;
    this.training = fused.training;
  }

  add(x: Tensor, other: Tensor): Tensor {
    return (this.fused as unknown as { call(a: Tensor, b: Tensor): Tensor }).call(x, other);
  }

  forward(x: Tensor, other: Tensor): Tensor {
    return this.add(x, other);
  }
}

interface GroupParts {
  layer: [string, AbsorbingLayer];
  bn: [string, Module] | null;
  add: [string, FloatFunctional] | null;
  relu: [string, ReLU | ReLU6] | null;
}

/** The group's modules by role, in the order layer, BatchNorm, add, ReLU / ReLU6; anything else is refused. */
function partsOf(model: Module, group: readonly string[], index: number): GroupParts {
  const where = `fuseModules: group ${index} [${group.map((g) => `'${g}'`).join(', ')}]`;
  if (!Array.isArray(group) || group.length < 2 || group.some((p) => typeof p !== 'string'))
    throw new InvalidArgumentError(`${where}: a group is two or more module paths, e.g. ['conv', 'bn', 'relu']`);
  const modules = group.map((path) => {
    try {
      return [path, model.getSubmodule(path)] as [string, Module];
    } catch (e) {
      throw new InvalidArgumentError(`${where}: ${(e as Error).message}`);
    }
  });
  const [first, ...rest] = modules;
  const family = FUSION_FAMILIES.find((f) => first![1] instanceof f.layer);
  if (!family)
    throw new InvalidArgumentError(
      `${where}: '${first![0]}' is a ${first![1].constructor.name}; a group starts with a ${FUSION_FAMILIES.map((f) => f.layer.name).join(', ')}`,
    );
  const parts: GroupParts = { layer: first as [string, AbsorbingLayer], bn: null, add: null, relu: null };
  const order = ['bn', 'add', 'relu'] as const;
  let at = 0;
  for (const [path, m] of rest) {
    const role = m instanceof FloatFunctional ? 'add' : m instanceof ReLU || m instanceof ReLU6 ? 'relu' : 'bn';
    if (role === 'bn' && !family.norms.some((n) => m instanceof n))
      throw new InvalidArgumentError(
        `${where}: '${path}' is a ${m.constructor.name}; after a ${family.layer.name} come ${family.norms.map((n) => n.name).join(' or ')}, a FloatFunctional add, then ReLU or ReLU6`,
      );
    const i = order.indexOf(role);
    if (i < at || parts[role])
      throw new InvalidArgumentError(
        `${where}: '${path}' (${m.constructor.name}) is out of place; list a group as layer, BatchNorm, add, ReLU (each but the layer optional)`,
      );
    at = i + 1;
    (parts as unknown as Record<string, [string, Module]>)[role] = [path, m];
  }
  return parts;
}

/** Fuses one group in `model` (in place). */
function fuseGroup(model: Module, parts: GroupParts): void {
  const family = FUSION_FAMILIES.find((f) => parts.layer[1] instanceof f.layer)!;
  const [layerPath, layer] = parts.layer;
  const conv = parts.bn ? fuseLayerWithBatchNorm(layer, parts.bn[1] as never) : layer;
  const activation = parts.relu ? (parts.relu[1] instanceof ReLU6 ? 'relu6' : 'relu') : null;
  const fused = new family.fused(conv, { withAdd: parts.add !== null, activation });
  fused.training = layer.training;
  const identity = () => {
    const id = new Identity();
    id.training = layer.training;
    return id;
  };
  if (parts.add) {
    model.setSubmodule(parts.add[0], new FusedAddSite(fused));
    model.setSubmodule(layerPath, identity());
  } else {
    model.setSubmodule(layerPath, fused);
  }
  for (const other of [parts.bn, parts.relu]) if (other) model.setSubmodule(other[0], identity());
}

/**
 * Fuses the named groups of modules, each listed in the order forward runs them: a Conv2d / Conv3d /
 * ConvTranspose2d / Linear, then optionally its BatchNorm, a FloatFunctional whose `add` takes the
 * layer's output first, and a ReLU or ReLU6: `fuseModules(model, [['conv1', 'bn1', 'relu1'], ...])`.
 * BatchNorm is absorbed with its running statistics (as fuseFx does), the fused module takes the
 * layer's path (the add's, with an add) and the rest become Identity. Returns a fused copy unless
 * `inplace`; with `exampleInputs` it checks the fused model computes what the float one did.
 */
export function fuseModules(
  model: Module,
  groups: readonly (readonly string[])[],
  options: FuseModulesOptions = {},
): Module {
  if (!(model instanceof Module)) throw new InvalidArgumentError('fuseModules: model must be a Module');
  if (!Array.isArray(groups))
    throw new InvalidArgumentError(
      "fuseModules: groups must be an array of module-path lists, e.g. [['conv', 'bn', 'relu']]",
    );
  const seen = new Map<string, number>();
  groups.forEach((group, i) => {
    for (const path of Array.isArray(group) ? group : []) {
      const before = seen.get(path);
      if (before !== undefined)
        throw new InvalidArgumentError(
          `fuseModules: '${path}' is listed in groups ${before} and ${i}; a module fuses once`,
        );
      seen.set(path, i);
    }
  });
  const out = options.inplace ? model : deepCopy(model);
  const parts = groups.map((g, i) => partsOf(out, g, i));
  const inputs = options.exampleInputs === undefined ? null : exampleInputList(options.exampleInputs);
  const expected = inputs ? runInEval(model, inputs) : null;
  for (const p of parts) fuseGroup(out, p);
  if (inputs && expected) checkSameOutputs(expected, runInEval(out, inputs));
  return out;
}

function exampleInputList(x: Tensor | readonly Tensor[]): readonly Tensor[] {
  const list = Array.isArray(x) ? (x as readonly Tensor[]) : [x as Tensor];
  if (!list.every((t) => t instanceof Tensor))
    throw new InvalidArgumentError(
      'fuseModules: exampleInputs must be a Tensor or an array of Tensors, one per model input',
    );
  return list;
}

/** The model's outputs (flattened to a list of tensors) in eval mode, its training flags restored after. */
function runInEval(model: Module, inputs: readonly Tensor[]): Tensor[] {
  const flags = model.namedModules().map(([, m]) => [m, m.training] as const);
  model.eval();
  try {
    const y = (model as unknown as { call(...a: Tensor[]): unknown }).call(...inputs);
    return flattenOutputs(y);
  } finally {
    for (const [m, t] of flags) m.training = t;
  }
}

function flattenOutputs(y: unknown): Tensor[] {
  if (y instanceof Tensor) return [y];
  if (Array.isArray(y)) return y.flatMap(flattenOutputs);
  if (y !== null && typeof y === 'object') return Object.values(y).flatMap(flattenOutputs);
  return [];
}

/** Outputs agree within float rounding of the BatchNorm absorption: |Δ| ≤ 1e-4 · max(1, max |expected|) per output. */
function checkSameOutputs(expected: readonly Tensor[], actual: readonly Tensor[]): void {
  if (expected.length !== actual.length)
    throw new InvalidArgumentError(
      `fuseModules: the fused model returns ${actual.length} tensors, the float model ${expected.length}`,
    );
  expected.forEach((e, i) => {
    const a = actual[i]!;
    const ev = e.values();
    const av = a.values();
    let peak = 1;
    let worst = 0;
    for (let k = 0; k < ev.length; k++) {
      peak = Math.max(peak, Math.abs(ev[k]!));
      worst = Math.max(worst, Math.abs(ev[k]! - (av[k] ?? Number.NaN)));
    }
    if (ev.length !== av.length || !(worst <= 1e-4 * peak))
      throw new InvalidArgumentError(
        `fuseModules: output ${i} of the fused model differs from the float model's (largest difference ${worst.toPrecision(3)}); ` +
          "a group is not run in the order listed, or forward passes the layer's output to add as its second input " +
          '(fuse that one with fuseFx / prepareQatFx, which see the order)',
      );
  });
}
