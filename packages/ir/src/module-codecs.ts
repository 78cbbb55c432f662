// How serialization describes and rebuilds modules: per class, the constructor-relevant config
// as JSON and a factory. Weights are not part of it; they travel in the state dict.
import * as nn from '@qtk/nn';
import type { Module } from '@qtk/nn';
import { InvalidArgumentError } from '@qtk/tensor';
import type { ModuleClass } from './leaf-modules.js';

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

export interface ModuleCodec<M extends Module = any> {
  /** The class; serialized modules name it by `cls.name`. */
  readonly cls: ModuleClass<M>;
  /** What the constructor needs to rebuild the module (JSON). */
  config(module: M): JsonValue;
  create(config: any): M;
}

/**
 * Codecs by class name. Registering the same codec twice is a no-op; another codec for a taken
 * name throws (two classes with one name cannot be told apart in serialized form).
 */
export class ModuleCodecRegistry {
  private readonly codecs = new Map<string, ModuleCodec>();

  register<M extends Module>(codec: ModuleCodec<M>): void {
    const name = codec.cls?.name;
    if (!name) throw new InvalidArgumentError('moduleCodecs.register: the codec needs a named class');
    const taken = this.codecs.get(name);
    if (taken === codec) return;
    if (taken) throw new InvalidArgumentError(`moduleCodecs.register: a codec for '${name}' is already registered`);
    this.codecs.set(name, codec as ModuleCodec);
  }

  has(type: string): boolean {
    return this.codecs.has(type);
  }

  get(type: string): ModuleCodec {
    const c = this.codecs.get(type);
    if (!c) throw new InvalidArgumentError(`no module codec for '${type}'; register one with moduleCodecs.register({ cls, config, create }). Known: ${this.list().join(', ')}`);
    return c;
  }

  /** The codec for exactly this module's class, if any. */
  forModule(module: Module): ModuleCodec | undefined {
    const c = this.codecs.get(module.constructor.name);
    return c && c.cls === module.constructor ? c : undefined;
  }

  list(): string[] {
    return [...this.codecs.keys()].sort();
  }
}

export const moduleCodecs = new ModuleCodecRegistry();

/** A JSON object without undefined entries. */
function json(o: Record<string, unknown>): JsonValue {
  const out: Record<string, JsonValue> = {};
  for (const [k, v] of Object.entries(o)) if (v !== undefined) out[k] = v as JsonValue;
  return out;
}

function plain<M extends Module>(cls: new () => M): ModuleCodec<M> {
  return { cls, config: () => null, create: () => new cls() };
}

for (const cls of [
  nn.ReLU, nn.ReLU6, nn.Sigmoid, nn.Tanh, nn.SiLU, nn.Hardsigmoid, nn.Hardswish, nn.SELU, nn.Identity,
  nn.DeQuantStub, nn.FloatFunctional, nn.Sequential, nn.ModuleList, nn.ModuleDict,
] as (new () => Module)[]) {
  moduleCodecs.register(plain(cls));
}

type Conv = nn.Conv1d | nn.Conv2d | nn.Conv3d;
for (const cls of [nn.Conv1d, nn.Conv2d, nn.Conv3d] as (new (i: number, o: number, k: number[], opt: object) => Conv)[]) {
  moduleCodecs.register<Conv>({
    cls,
    config: (m) => json({ inChannels: m.inChannels, outChannels: m.outChannels, kernelSize: m.kernelSize, stride: m.stride, padding: m.padding, dilation: m.dilation, groups: m.groups, bias: m.bias !== null }),
    create: (c) => new cls(c.inChannels, c.outChannels, c.kernelSize, { stride: c.stride, padding: c.padding, dilation: c.dilation, groups: c.groups, bias: c.bias }),
  });
}

type ConvT = nn.ConvTranspose1d | nn.ConvTranspose2d;
for (const cls of [nn.ConvTranspose1d, nn.ConvTranspose2d] as (new (i: number, o: number, k: number[], opt: object) => ConvT)[]) {
  moduleCodecs.register<ConvT>({
    cls,
    config: (m) =>
      json({ inChannels: m.inChannels, outChannels: m.outChannels, kernelSize: m.kernelSize, stride: m.stride, padding: m.padding, outputPadding: m.outputPadding, dilation: m.dilation, groups: m.groups, bias: m.bias !== null }),
    create: (c) =>
      new cls(c.inChannels, c.outChannels, c.kernelSize, { stride: c.stride, padding: c.padding, outputPadding: c.outputPadding, dilation: c.dilation, groups: c.groups, bias: c.bias }),
  });
}

type BN = nn.BatchNorm1d | nn.BatchNorm2d | nn.BatchNorm3d;
for (const cls of [nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d] as (new (n: number, o: object) => BN)[]) {
  moduleCodecs.register<BN>({
    cls,
    config: (m) => json({ numFeatures: m.numFeatures, eps: m.eps, momentum: m.momentum, affine: m.affine, trackRunningStats: m.trackRunningStats }),
    create: (c) => new cls(c.numFeatures, { eps: c.eps, momentum: c.momentum, affine: c.affine, trackRunningStats: c.trackRunningStats }),
  });
}

moduleCodecs.register<nn.Linear>({
  cls: nn.Linear,
  config: (m) => json({ inFeatures: m.inFeatures, outFeatures: m.outFeatures, bias: m.bias !== null }),
  create: (c) => new nn.Linear(c.inFeatures, c.outFeatures, { bias: c.bias }),
});
moduleCodecs.register<nn.LayerNorm>({
  cls: nn.LayerNorm,
  config: (m) => json({ normalizedShape: m.normalizedShape, eps: m.eps, elementwiseAffine: m.elementwiseAffine, bias: m.bias !== null }),
  create: (c) => new nn.LayerNorm(c.normalizedShape, { eps: c.eps, elementwiseAffine: c.elementwiseAffine, bias: c.bias }),
});
moduleCodecs.register<nn.PReLU>({
  cls: nn.PReLU,
  config: (m) => json({ numParameters: m.weight.size }),
  create: (c) => new nn.PReLU({ numParameters: c.numParameters }),
});

/** Classes whose constructor takes one options object built from these fields. */
function options<M extends Module>(cls: new (o: any) => M, fields: readonly (keyof M & string)[]): ModuleCodec<M> {
  return {
    cls,
    config: (m) => json(Object.fromEntries(fields.map((f) => [f, m[f]]))),
    create: (c) => new cls({ ...c }),
  };
}

moduleCodecs.register(options(nn.Hardtanh, ['minVal', 'maxVal']));
moduleCodecs.register(options(nn.LeakyReLU, ['negativeSlope']));
moduleCodecs.register(options(nn.GELU, ['approximate']));
moduleCodecs.register(options(nn.ELU, ['alpha']));
moduleCodecs.register(options(nn.Softplus, ['beta', 'threshold']));
moduleCodecs.register(options(nn.Softmax, ['dim']));
moduleCodecs.register(options(nn.LogSoftmax, ['dim']));
moduleCodecs.register(options(nn.Flatten, ['startDim', 'endDim']));
moduleCodecs.register(options(nn.Dropout, ['p']));
moduleCodecs.register(options(nn.Upsample, ['size', 'scaleFactor', 'mode', 'alignCorners']));
moduleCodecs.register(options(nn.CrossEntropyLoss, ['labelSmoothing', 'reduction', 'ignoreIndex']));
moduleCodecs.register(options(nn.MSELoss, ['reduction']));
moduleCodecs.register(options(nn.L1Loss, ['reduction']));
moduleCodecs.register<nn.QuantStub>({
  cls: nn.QuantStub,
  config: (m) => json({ scale: m.scale ?? undefined }),
  create: (c) => new nn.QuantStub(c),
});
moduleCodecs.register<nn.MaxPool2d>({
  cls: nn.MaxPool2d,
  config: (m) => json({ kernelSize: m.kernelSize, stride: m.stride, padding: m.padding, dilation: m.dilation, ceilMode: m.ceilMode }),
  create: (c) => new nn.MaxPool2d(c.kernelSize, { stride: c.stride, padding: c.padding, dilation: c.dilation, ceilMode: c.ceilMode }),
});
moduleCodecs.register<nn.AvgPool2d>({
  cls: nn.AvgPool2d,
  config: (m) => json({ kernelSize: m.kernelSize, stride: m.stride, padding: m.padding, ceilMode: m.ceilMode, countIncludePad: m.countIncludePad, divisorOverride: m.divisorOverride }),
  create: (c) => new nn.AvgPool2d(c.kernelSize, { stride: c.stride, padding: c.padding, ceilMode: c.ceilMode, countIncludePad: c.countIncludePad, divisorOverride: c.divisorOverride }),
});
moduleCodecs.register<nn.AdaptiveAvgPool2d>({
  cls: nn.AdaptiveAvgPool2d,
  config: (m) => json({ outputSize: m.outputSize }),
  create: (c) => new nn.AdaptiveAvgPool2d(c.outputSize),
});
