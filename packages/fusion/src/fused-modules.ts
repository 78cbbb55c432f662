// Fused modules: one class per conv family, holding the conv (BN already absorbed into its weight
// and bias) and flags for the add and the activation that followed it.
import { moduleCodecs, registerLeafModule } from '@qtk/ir';
import { Conv1d, Conv2d, Conv3d, ConvTranspose2d, Linear, Module } from '@qtk/nn';
import { add, InvalidArgumentError, relu, relu6, type Tensor } from '@qtk/tensor';
import { z } from 'zod';

export type FusedActivation = 'relu' | 'relu6' | null;

export interface FusedOptions {
  /** forward takes a second input added to the conv output. */
  withAdd?: boolean;
  /** Whether the conv output was the first add input (`conv + other`) or the second (`other + conv`). Default true. */
  convFirst?: boolean;
  activation?: FusedActivation;
}

/** Conv (BN absorbed) → optional add of a second input → optional ReLU / ReLU6. */
export abstract class FusedConvBase<C extends Module = Module> extends Module {
  readonly conv: C;
  readonly withAdd: boolean;
  readonly convFirst: boolean;
  readonly activation: FusedActivation;

  constructor(conv: C, options: FusedOptions = {}) {
    super();
    // biome-ignore lint/suspicious/noExplicitAny: a constructor type that accepts every subclass, whatever its constructor parameters
    const expected = (this.constructor as unknown as { convClass: new (...a: any[]) => Module }).convClass;
    if (!(conv instanceof expected)) {
      throw new InvalidArgumentError(
        `${this.constructor.name}: expected a ${expected.name}, got ${(conv as unknown as { constructor?: { name?: string } } | null)?.constructor?.name ?? typeof conv}`,
      );
    }
    const activation = options.activation ?? null;
    if (activation !== null && activation !== 'relu' && activation !== 'relu6') {
      throw new InvalidArgumentError(
        `${this.constructor.name}: activation must be 'relu', 'relu6' or null, got ${String(activation)}`,
      );
    }
    this.conv = conv;
    this.withAdd = options.withAdd ?? false;
    this.convFirst = options.convFirst ?? true;
    this.activation = activation;
    this.training = conv.training;
  }

  /**
   * `x` goes through the conv; `other` is added when the module was fused with an add. A Conv1d/2d/3d
   * runs the three as one op (`convWithEpilogue`), which gives the same values in one pass.
   */
  forward(x: Tensor, other?: Tensor): Tensor {
    if (this.withAdd && other === undefined)
      throw new InvalidArgumentError(`${this.constructor.name}: fused with an add, so forward needs (x, other)`);
    if (!this.withAdd && other !== undefined)
      throw new InvalidArgumentError(`${this.constructor.name}: not fused with an add, so forward takes one input`);
    const conv = this.conv as Module;
    if ((this.withAdd || this.activation) && isPlainConv(conv) && conv.canFuseEpilogue()) {
      return conv.forwardWithEpilogue(x, { other, activation: this.activation });
    }
    let y = (this.conv as unknown as { call(t: Tensor): Tensor }).call(x);
    if (this.withAdd) y = this.convFirst ? add(y, other!) : add(other!, y);
    if (this.activation === 'relu') return relu(y);
    if (this.activation === 'relu6') return relu6(y);
    return y;
  }

  override extraRepr(): string {
    const parts = [];
    if (this.withAdd) parts.push(`add=${this.convFirst ? 'conv+other' : 'other+conv'}`);
    if (this.activation) parts.push(`activation=${this.activation}`);
    return parts.join(', ');
  }
}

function isPlainConv(m: Module): m is Conv1d | Conv2d | Conv3d {
  return m instanceof Conv1d || m instanceof Conv2d || m instanceof Conv3d;
}

/** Conv2d (+BN) (+add) (+ReLU/ReLU6). */
export class ConvAddReLU2d extends FusedConvBase<Conv2d> {
  static readonly convClass = Conv2d;
}

/** ConvTranspose2d (+BN) (+add) (+ReLU/ReLU6). */
export class ConvTransposeAddReLU2d extends FusedConvBase<ConvTranspose2d> {
  static readonly convClass = ConvTranspose2d;
}

/** Conv3d (+BN) (+add) (+ReLU/ReLU6). */
export class ConvAddReLU3d extends FusedConvBase<Conv3d> {
  static readonly convClass = Conv3d;
}

/** Linear (+BN1d) (+add) (+ReLU/ReLU6). */
export class LinearAddReLU extends FusedConvBase<Linear> {
  static readonly convClass = Linear;
}

const FUSED_CLASSES = [ConvAddReLU2d, ConvTransposeAddReLU2d, ConvAddReLU3d, LinearAddReLU] as const;

let fusedRegistered = false;

/** A stored fused module: its conv's config (checked by the conv's codec) and the fusion flags. */
const fusedConfigSchema = z
  .object({
    conv: z.custom<unknown>((v) => v !== undefined, { message: 'Required' }),
    withAdd: z.boolean(),
    convFirst: z.boolean(),
    activation: z.enum(['relu', 'relu6']).nullable(),
  })
  .strict();

/**
 * Makes the fused classes trace leaves and gives them serialization codecs (config: the conv's own
 * codec config plus the flags), so a fused GraphModule retraces and round-trips through JSON.
 * Runs when this module loads; idempotent.
 */
export function registerFusedModules(): void {
  if (fusedRegistered) return;
  fusedRegistered = true;
  registerLeafModule(FusedConvBase);
  for (const cls of FUSED_CLASSES) {
    const convCodec = () => moduleCodecs.get(cls.convClass.name);
    moduleCodecs.register<FusedConvBase, z.infer<typeof fusedConfigSchema>>({
      cls: cls as unknown as new () => FusedConvBase,
      schema: fusedConfigSchema,
      config: (m) => ({
        conv: convCodec().config(m.conv),
        withAdd: m.withAdd,
        convFirst: m.convFirst,
        activation: m.activation,
      }),
      create: ({ conv, ...o }) =>
        new (cls as unknown as new (conv: Module, o: FusedOptions) => FusedConvBase)(
          moduleCodecs.build(cls.convClass.name, conv, { field: 'conv', child: 'conv' }),
          o,
        ),
    });
  }
}

registerFusedModules();
