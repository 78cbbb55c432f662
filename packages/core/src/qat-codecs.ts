// Serialization codecs of core's QAT modules (see @qtk/ir's moduleCodecs). QatModule's parts are
// its children (the float or fused module and the two fake-quants), which serialize on their own:
// the codec builds it with placeholders, and deserialization puts each serialized child in its
// field. The composite forms hold their step fake-quants in a `steps` object as well, so their
// codecs carry each step's config and build them in the constructor. Stored configs are checked
// by each codec's schema at load (the steps by FakeQuantize's).
import { FakeQuantize } from '@qtk/fake-quant';
import { LayerNormQat, SoftmaxQat } from '@qtk/fixed-point';
import { moduleCodecs, type JsonValue } from '@qtk/ir';
import { Identity, type LayerNorm, Softmax } from '@qtk/nn';
import { z } from 'zod';
import { QatModule } from './qat-module.js';

type Steps = Record<string, FakeQuantize>;

function stepConfigs(steps: Steps): Record<string, JsonValue> {
  const codec = moduleCodecs.get('FakeQuantize');
  return Object.fromEntries(Object.entries(steps).map(([k, fq]) => [k, codec.config(fq)]));
}

/** The step configs of a composite: exactly its steps, in the constructor's order (each checked by FakeQuantize's codec). */
/** A nested config, checked by its own codec when built; only its presence is checked here. */
const present = z.custom<unknown>((v) => v !== undefined, { message: 'Required' });

function stepsSchema<K extends string>(keys: readonly [K, ...K[]]) {
  return z.object(Object.fromEntries(keys.map((k) => [k, present])) as Record<K, typeof present>).strict();
}
const softmaxSteps = stepsSchema(['sub', 'exp', 'sum', 'reciprocal']);
const layerNormSteps = stepsSchema(['mean', 'sub', 'square', 'variance', 'rsqrt', 'normalized']);

/** A step factory handing out the saved fake-quants in the constructor's order. */
function stepFactory(configs: Record<string, unknown>): () => FakeQuantize {
  const list = Object.entries(configs).map(
    ([k, c]) =>
      moduleCodecs.build('FakeQuantize', c, { field: `steps.${k}`, child: `${k}_fake_quant` }) as FakeQuantize,
  );
  let i = 0;
  return () => list[i++] ?? new FakeQuantize();
}

const qatModuleSchema = z.object({ training: z.boolean().optional() }).strict().nullable();
const softmaxQatSchema = z.object({ dim: z.number().int(), steps: softmaxSteps }).strict();
const layerNormQatSchema = z.object({ float: present, steps: layerNormSteps }).strict();

let registered = false;

/** Registers QatModule's codec with @qtk/ir's moduleCodecs (idempotent). */
export function registerQatCodecs(): void {
  if (registered) return;
  registered = true;
  moduleCodecs.register<QatModule, z.infer<typeof qatModuleSchema>>({
    cls: QatModule,
    schema: qatModuleSchema,
    config: (m) => ({ training: m.training }),
    create: (c) => {
      const q = new QatModule(new Identity(), null, null);
      q.training = c?.training ?? true;
      return q;
    },
  });
  moduleCodecs.register<SoftmaxQat<FakeQuantize>, z.infer<typeof softmaxQatSchema>>({
    cls: SoftmaxQat,
    schema: softmaxQatSchema,
    config: (m) => ({ dim: m.dim, steps: stepConfigs(m.steps) }),
    create: (c) => new SoftmaxQat(new Softmax({ dim: c.dim }), stepFactory(c.steps)),
  });
  moduleCodecs.register<LayerNormQat<FakeQuantize>, z.infer<typeof layerNormQatSchema>>({
    cls: LayerNormQat,
    schema: layerNormQatSchema,
    config: (m) => ({ float: moduleCodecs.get('LayerNorm').config(m.float), steps: stepConfigs(m.steps) }),
    create: (c) =>
      new LayerNormQat(
        moduleCodecs.build('LayerNorm', c.float, { field: 'float', child: 'float' }) as LayerNorm,
        stepFactory(c.steps),
      ),
  });
}

registerQatCodecs();
