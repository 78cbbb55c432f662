// How serialization describes and rebuilds modules: per class, the constructor-relevant config
// as JSON and a factory. Weights are not part of it; they travel in the state dict.
import * as nn from '@qtk/nn';
import type { Module } from '@qtk/nn';
import { InvalidArgumentError, Registry } from '@qtk/tensor';
import { z } from 'zod';
import { ModuleConfigError } from './errors.js';
import type { ModuleClass } from './leaf-modules.js';

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

// biome-ignore lint/suspicious/noExplicitAny: the registry holds codecs for every module and config type
export interface ModuleCodec<M extends Module = any, C = any> {
  /** The class; serialized modules name it by `cls.name`. */
  readonly cls: ModuleClass<M>;
  /**
   * Checks a stored config before `create` (types, ranges, array lengths consistent with each other
   * and with the module's tensors); its output is what `create` gets. Required: configs come from files.
   */
  readonly schema: z.ZodType<C, z.ZodTypeDef, unknown>;
  /** What the constructor needs to rebuild the module (JSON). */
  config(module: M): JsonValue;
  /** Builds the module from a config that passed `schema` (the schema's output). */
  create(config: C): M;
  /**
   * The tensors `create` allocates from a config (name relative to the module, shape, the config
   * field that sets it): checked against the state dict before anything is allocated, so a config
   * cannot make a small file allocate gigabytes. Codecs whose modules allocate by config need it.
   */
  tensors?(config: C): CodecTensor[];
}

export interface CodecTensor {
  name: string;
  shape: readonly number[];
  field: string;
}

/** Tensors a config may imply when there is no state dict to compare with: the typed-array limit. */
const MAX_ELEMENTS = 2 ** 31 - 1;

/** Where a config is rebuilt, for errors: the module path, or the field of an enclosing config. */
export interface BuildPlace {
  path?: string;
  /** A nested config (a fused module's conv, a value op's float module): its field in the outer config. */
  field?: string;
  /** A nested module's child name under the module being built, for its tensors' state dict keys. */
  child?: string;
  /** The shape of the state dict's tensor of that key, if it has one; config-implied tensors must match it. */
  stateShape?: (key: string) => readonly number[] | undefined;
}

const sameShape = (a: readonly number[], b: readonly number[]) =>
  a.length === b.length && a.every((d, i) => d === b[i]);

function fieldOf(issue: z.ZodIssue, prefix: string | undefined): string {
  const p = issue.path.join('.');
  return prefix ? (p ? `${prefix}.${p}` : prefix) : p || '(config)';
}

/**
 * Codecs by class name, in a Registry. Registering the same codec twice is a no-op; another codec
 * for a taken name throws a RegistryError (two classes with one name cannot be told apart in
 * serialized form).
 */
export class ModuleCodecRegistry {
  private readonly codecs = new Registry<ModuleCodec>('module codec', {
    keyOf: (codec) => codec.cls?.name,
    check: (codec) => {
      if (!(codec.schema instanceof z.ZodType)) {
        throw new InvalidArgumentError(
          `moduleCodecs.register: the codec for '${codec.cls.name}' has no zod schema of its config; configs come from files and are checked before create, so give it { schema }`,
        );
      }
    },
    howToRegister: 'moduleCodecs.register({ cls, schema, config, create })',
    conflictHint: (name) =>
      `serialized modules name their class, so two classes called '${name}' cannot both have a codec; rename one`,
  });
  /** The modules being built (outermost first), so nested builds know their state dict keys. */
  private readonly building: { path: string | undefined; stateShape: BuildPlace['stateShape'] }[] = [];

  // biome-ignore lint/suspicious/noExplicitAny: the registry holds codecs for every module and config type
  register<M extends Module, C = any>(codec: ModuleCodec<M, C>): void {
    if (!codec?.cls?.name) throw new InvalidArgumentError('moduleCodecs.register: the codec needs a named class');
    this.codecs.register(codec as ModuleCodec);
  }

  has(type: string): boolean {
    return this.codecs.has(type);
  }

  /** The codec for a class name; a miss throws a RegistryError listing the registered ones. */
  get(type: string): ModuleCodec {
    return this.codecs.get(type);
  }

  /**
   * Checks a stored config with the codec's schema, then builds the module. A config that fails
   * is a ModuleConfigError naming the module path, the codec and the field.
   */
  build(type: string, config: unknown, place: BuildPlace = {}): Module {
    const codec = this.get(type);
    const parsed = codec.schema.safeParse(config ?? null);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      throw new ModuleConfigError(place.path, type, fieldOf(issue, place.field), issue.message, {
        cause: parsed.error,
      });
    }
    const outer = this.building[this.building.length - 1];
    const at =
      place.path ??
      (outer?.path !== undefined && place.child !== undefined
        ? outer.path
          ? `${outer.path}.${place.child}`
          : place.child
        : undefined);
    const stateShape = place.stateShape ?? outer?.stateShape;
    for (const t of codec.tensors?.(parsed.data) ?? []) {
      const field = fieldOf({ path: [t.field] } as unknown as z.ZodIssue, place.field);
      const shape = `[${t.shape.join(', ')}]`;
      if (stateShape && at !== undefined) {
        const key = at ? `${at}.${t.name}` : t.name;
        const held = stateShape(key);
        if (!held)
          throw new ModuleConfigError(
            place.path,
            type,
            field,
            `implies tensor '${key}' ${shape}, which the state dict does not hold`,
          );
        if (!sameShape(held, t.shape))
          throw new ModuleConfigError(
            place.path,
            type,
            field,
            `implies tensor '${key}' of shape ${shape}, the state dict holds [${held.join(', ')}]`,
          );
      } else if (t.shape.reduce((a, b) => a * b, 1) > MAX_ELEMENTS) {
        throw new ModuleConfigError(
          place.path,
          type,
          field,
          `implies tensor '${t.name}' of shape ${shape}, more elements than a tensor can hold`,
        );
      }
    }
    this.building.push({ path: at, stateShape });
    try {
      return codec.create(parsed.data);
    } catch (e) {
      // A nested config (built without a path) failed: name it from this module.
      if (e instanceof ModuleConfigError && e.modulePath === undefined && place.path !== undefined) {
        throw new ModuleConfigError(place.path, type, `${e.field} (${e.codec})`, e.problem, { cause: e });
      }
      throw e;
    } finally {
      this.building.pop();
    }
  }

  /** The codec for exactly this module's class, if any. */
  forModule(module: Module): ModuleCodec | undefined {
    const name = module.constructor.name;
    const c = this.codecs.has(name) ? this.codecs.get(name) : undefined;
    return c && c.cls === module.constructor ? c : undefined;
  }

  list(): string[] {
    return this.codecs.names().sort();
  }
}

export const moduleCodecs = new ModuleCodecRegistry();

/** A JSON object without undefined entries. */
function json(o: Record<string, unknown>): JsonValue {
  const out: Record<string, JsonValue> = {};
  for (const [k, v] of Object.entries(o)) if (v !== undefined) out[k] = v as JsonValue;
  return out;
}

// Schema pieces for stored configs.
const int = z.number().int();
const posInt = z.number().int().positive();
const nonNegInt = z.number().int().nonnegative();
/*
 * Caps on sizes that set how much a module allocates per input (documented in docs/security.md):
 * beyond them a stored config is refused as damaged, so a small file cannot make the first run
 * allocate without bound. Real models stay far below them.
 */
export const CONFIG_LIMITS = { padding: 1024, outputSize: 4096, scaleFactor: 64 } as const;
const padInt = nonNegInt.max(CONFIG_LIMITS.padding);
const outSize = posInt.max(CONFIG_LIMITS.outputSize);
/** A max pool's padding is at most half its kernel (PyTorch's rule; MaxPool2d enforces it). */
function halfKernelPadding(c: { kernelSize: number[]; padding: number[] }, ctx: z.RefinementCtx): void {
  c.padding.forEach((p, i) => {
    if (2 * p > c.kernelSize[i]!)
      ctx.addIssue({
        code: z.ZodIssueCode.custom,
        path: ['padding', i],
        message: `${p} is more than half the kernel size ${c.kernelSize[i]}`,
      });
  });
}
const finite = z.number().finite();
const ints = (n: number, item: z.ZodNumber) => z.array(item).length(n);
const reduction = z.enum(['none', 'mean', 'sum']);
/** Channels split into groups: both counts divisible by `groups`. */
function groupsDivide(c: { inChannels: number; outChannels: number; groups: number }, ctx: z.RefinementCtx): void {
  if (c.inChannels % c.groups !== 0 || c.outChannels % c.groups !== 0) {
    ctx.addIssue({
      code: z.ZodIssueCode.custom,
      path: ['groups'],
      message: `groups ${c.groups} must divide inChannels ${c.inChannels} and outChannels ${c.outChannels}`,
    });
  }
}

function plain<M extends Module>(cls: new () => M): ModuleCodec<M> {
  return { cls, schema: z.null(), config: () => null, create: () => new cls() };
}

for (const cls of [
  nn.ReLU,
  nn.ReLU6,
  nn.Sigmoid,
  nn.Tanh,
  nn.SiLU,
  nn.Hardsigmoid,
  nn.Hardswish,
  nn.SELU,
  nn.Identity,
  nn.DeQuantStub,
  nn.FloatFunctional,
  nn.Sequential,
  nn.ModuleList,
  nn.ModuleDict,
] as (new () => Module)[]) {
  moduleCodecs.register(plain(cls));
}

function convTensors(weight: number[], out: number, bias: boolean): CodecTensor[] {
  return [
    { name: 'weight', shape: weight, field: 'inChannels/outChannels/kernelSize' },
    ...(bias ? [{ name: 'bias', shape: [out], field: 'outChannels' }] : []),
  ];
}

/** A conv or transposed conv layer's stored config (outputPadding for the transposed ones, after padding). */
function convConfig(m: ConvLayer): JsonValue {
  return json({
    inChannels: m.inChannels,
    outChannels: m.outChannels,
    kernelSize: m.kernelSize,
    stride: m.stride,
    padding: m.padding,
    outputPadding: 'outputPadding' in m ? m.outputPadding : undefined,
    dilation: m.dilation,
    groups: m.groups,
    bias: m.bias !== null,
  });
}

/** A conv layer's config; `paddings` are its kind's padding fields, stored after the stride. */
function convLayerSchema<P extends z.ZodRawShape>(rank: number, paddings: P) {
  return z
    .object({
      inChannels: posInt,
      outChannels: posInt,
      kernelSize: ints(rank, posInt),
      stride: ints(rank, posInt),
      ...paddings,
      dilation: ints(rank, posInt),
      groups: posInt,
      bias: z.boolean(),
    })
    .strict();
}

const convSchema = (rank: number) =>
  convLayerSchema(rank, { padding: z.union([ints(rank, padInt), z.enum(['same', 'valid'])]) }).superRefine(
    groupsDivide,
  );
const convTransposeSchema = (rank: number) =>
  convLayerSchema(rank, { padding: ints(rank, padInt), outputPadding: ints(rank, padInt) }).superRefine(groupsDivide);

type ConvLayer = nn.Conv1d | nn.Conv2d | nn.Conv3d | nn.ConvTranspose1d | nn.ConvTranspose2d;
type ConvLayerConfig = z.infer<ReturnType<typeof convSchema>> | z.infer<ReturnType<typeof convTransposeSchema>>;
for (const [cls, rank, transposed] of [
  [nn.Conv1d, 1, false],
  [nn.Conv2d, 2, false],
  [nn.Conv3d, 3, false],
  [nn.ConvTranspose1d, 1, true],
  [nn.ConvTranspose2d, 2, true],
] as [new (i: number, o: number, k: number[], opt: object) => ConvLayer, number, boolean][]) {
  moduleCodecs.register<ConvLayer, ConvLayerConfig>({
    cls,
    schema: transposed ? convTransposeSchema(rank) : convSchema(rank),
    config: (m) => convConfig(m),
    create: ({ inChannels, outChannels, kernelSize, ...options }) =>
      new cls(inChannels, outChannels, kernelSize, options),
    // a conv's weight is [out, in/groups, ...kernel], a transposed conv's [in, out/groups, ...kernel]
    tensors: (c) =>
      convTensors(
        transposed
          ? [c.inChannels, c.outChannels / c.groups, ...c.kernelSize]
          : [c.outChannels, c.inChannels / c.groups, ...c.kernelSize],
        c.outChannels,
        c.bias,
      ),
  });
}

const bnSchema = z
  .object({
    numFeatures: posInt,
    eps: finite.positive(),
    momentum: z.number().min(0).max(1).nullable(),
    affine: z.boolean(),
    trackRunningStats: z.boolean(),
  })
  .strict();
type BN = nn.BatchNorm1d | nn.BatchNorm2d | nn.BatchNorm3d;
for (const cls of [nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d] as (new (
  n: number,
  o: object,
) => BN)[]) {
  moduleCodecs.register<BN, z.infer<typeof bnSchema>>({
    cls,
    schema: bnSchema,
    config: (m) =>
      json({
        numFeatures: m.numFeatures,
        eps: m.eps,
        momentum: m.momentum,
        affine: m.affine,
        trackRunningStats: m.trackRunningStats,
      }),
    create: (c) =>
      new cls(c.numFeatures, {
        eps: c.eps,
        momentum: c.momentum,
        affine: c.affine,
        trackRunningStats: c.trackRunningStats,
      }),
    tensors: (c) =>
      [...(c.affine ? ['weight', 'bias'] : []), ...(c.trackRunningStats ? ['runningMean', 'runningVar'] : [])].map(
        (name) => ({ name, shape: [c.numFeatures], field: 'numFeatures' }),
      ),
  });
}

const linearSchema = z.object({ inFeatures: posInt, outFeatures: posInt, bias: z.boolean() }).strict();
moduleCodecs.register<nn.Linear, z.infer<typeof linearSchema>>({
  cls: nn.Linear,
  schema: linearSchema,
  config: (m) => json({ inFeatures: m.inFeatures, outFeatures: m.outFeatures, bias: m.bias !== null }),
  create: (c) => new nn.Linear(c.inFeatures, c.outFeatures, { bias: c.bias }),
  tensors: (c) => [
    { name: 'weight', shape: [c.outFeatures, c.inFeatures], field: 'inFeatures' },
    ...(c.bias ? [{ name: 'bias', shape: [c.outFeatures], field: 'outFeatures' }] : []),
  ],
});
const layerNormSchema = z
  .object({
    normalizedShape: z.array(posInt).min(1),
    eps: finite.positive(),
    elementwiseAffine: z.boolean(),
    bias: z.boolean(),
  })
  .strict();
moduleCodecs.register<nn.LayerNorm, z.infer<typeof layerNormSchema>>({
  cls: nn.LayerNorm,
  schema: layerNormSchema,
  config: (m) =>
    json({
      normalizedShape: m.normalizedShape,
      eps: m.eps,
      elementwiseAffine: m.elementwiseAffine,
      bias: m.bias !== null,
    }),
  create: (c) =>
    new nn.LayerNorm(c.normalizedShape, { eps: c.eps, elementwiseAffine: c.elementwiseAffine, bias: c.bias }),
  tensors: (c) =>
    (c.elementwiseAffine ? [c.bias ? ['weight', 'bias'] : ['weight']].flat() : []).map((name) => ({
      name,
      shape: c.normalizedShape,
      field: 'normalizedShape',
    })),
});
const preluSchema = z.object({ numParameters: posInt }).strict();
moduleCodecs.register<nn.PReLU, z.infer<typeof preluSchema>>({
  cls: nn.PReLU,
  schema: preluSchema,
  config: (m) => json({ numParameters: m.weight.size }),
  create: (c) => new nn.PReLU({ numParameters: c.numParameters }),
  tensors: (c) => [{ name: 'weight', shape: [c.numParameters], field: 'numParameters' }],
});

/** Classes whose constructor takes one options object built from these fields (their schema's keys). */
// biome-ignore lint/suspicious/noExplicitAny: each module class takes its own config type
function options<M extends Module>(cls: new (o: any) => M, shape: z.ZodRawShape): ModuleCodec<M> {
  const fields = Object.keys(shape) as (keyof M & string)[];
  return {
    cls,
    schema: z.object(shape).strict(),
    config: (m) => json(Object.fromEntries(fields.map((f) => [f, m[f]]))),
    create: (c) => new cls({ ...c }),
  };
}

const pair = (item: z.ZodNumber) => z.union([item, z.tuple([item, item])]);
moduleCodecs.register(options(nn.Hardtanh, { minVal: finite, maxVal: finite }));
moduleCodecs.register(options(nn.LeakyReLU, { negativeSlope: finite }));
moduleCodecs.register(options(nn.GELU, { approximate: z.enum(['none', 'tanh']) }));
moduleCodecs.register(options(nn.ELU, { alpha: finite }));
moduleCodecs.register(options(nn.Softplus, { beta: finite.positive(), threshold: finite }));
moduleCodecs.register(options(nn.Softmax, { dim: int }));
moduleCodecs.register(options(nn.LogSoftmax, { dim: int }));
moduleCodecs.register(options(nn.Flatten, { startDim: int, endDim: int }));
moduleCodecs.register(options(nn.Dropout, { p: z.number().min(0).max(1) }));
moduleCodecs.register(
  options(nn.Upsample, {
    size: pair(outSize).optional(),
    scaleFactor: pair(finite.positive().max(CONFIG_LIMITS.scaleFactor)).optional(),
    mode: z.enum(['nearest', 'bilinear']),
    alignCorners: z.boolean().optional(),
  }),
);
moduleCodecs.register(
  options(nn.CrossEntropyLoss, { labelSmoothing: z.number().min(0).max(1), reduction, ignoreIndex: int.optional() }),
);
moduleCodecs.register(options(nn.MSELoss, { reduction }));
moduleCodecs.register(options(nn.L1Loss, { reduction }));
/** Modules whose constructor takes one positive integer, kept in the field of that name. */
function oneInt<M extends Module>(cls: new (n: number) => M, field: keyof M & string): ModuleCodec<M> {
  return {
    cls,
    schema: z.object({ [field]: posInt }).strict(),
    config: (m) => json({ [field]: m[field] }),
    create: (c) => new cls((c as Record<string, number>)[field]!),
  };
}
moduleCodecs.register(oneInt(nn.PixelShuffle, 'upscaleFactor'));
moduleCodecs.register(oneInt(nn.PixelUnshuffle, 'downscaleFactor'));
moduleCodecs.register(oneInt(nn.ChannelShuffle, 'groups'));
const quantStubSchema = z.object({ scale: finite.positive().optional() }).strict();
moduleCodecs.register<nn.QuantStub, z.infer<typeof quantStubSchema>>({
  cls: nn.QuantStub,
  schema: quantStubSchema,
  config: (m) => json({ scale: m.scale ?? undefined }),
  create: (c) => new nn.QuantStub(c),
});
const maxPoolSchema = z
  .object({
    kernelSize: ints(2, posInt),
    stride: ints(2, posInt),
    padding: ints(2, nonNegInt),
    dilation: ints(2, posInt),
    ceilMode: z.boolean(),
  })
  .strict()
  .superRefine(halfKernelPadding);
moduleCodecs.register<nn.MaxPool2d, z.infer<typeof maxPoolSchema>>({
  cls: nn.MaxPool2d,
  schema: maxPoolSchema,
  config: (m) =>
    json({
      kernelSize: m.kernelSize,
      stride: m.stride,
      padding: m.padding,
      dilation: m.dilation,
      ceilMode: m.ceilMode,
    }),
  create: (c) =>
    new nn.MaxPool2d(c.kernelSize, {
      stride: c.stride,
      padding: c.padding,
      dilation: c.dilation,
      ceilMode: c.ceilMode,
    }),
});
const avgPoolSchema = z
  .object({
    kernelSize: ints(2, posInt),
    stride: ints(2, posInt),
    padding: ints(2, nonNegInt),
    ceilMode: z.boolean(),
    countIncludePad: z.boolean(),
    divisorOverride: posInt.optional(),
  })
  .strict()
  .refine((c) => c.padding.every((p, i) => p < c.kernelSize[i]!), {
    message: "a padding must be smaller than the kernel (ONNX Runtime's rule)",
    path: ['padding'],
  });
moduleCodecs.register<nn.AvgPool2d, z.infer<typeof avgPoolSchema>>({
  cls: nn.AvgPool2d,
  schema: avgPoolSchema,
  config: (m) =>
    json({
      kernelSize: m.kernelSize,
      stride: m.stride,
      padding: m.padding,
      ceilMode: m.ceilMode,
      countIncludePad: m.countIncludePad,
      divisorOverride: m.divisorOverride,
    }),
  create: (c) =>
    new nn.AvgPool2d(c.kernelSize, {
      stride: c.stride,
      padding: c.padding,
      ceilMode: c.ceilMode,
      countIncludePad: c.countIncludePad,
      divisorOverride: c.divisorOverride,
    }),
});
const adaptiveSchema = z.object({ outputSize: z.union([outSize, z.array(outSize.nullable()).length(2)]) }).strict();
moduleCodecs.register<nn.AdaptiveAvgPool2d, z.infer<typeof adaptiveSchema>>({
  cls: nn.AdaptiveAvgPool2d,
  schema: adaptiveSchema,
  config: (m) => json({ outputSize: m.outputSize }),
  create: (c) => new nn.AdaptiveAvgPool2d(c.outputSize),
});
