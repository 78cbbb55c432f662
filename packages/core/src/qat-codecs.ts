// Serialization codecs of core's QAT modules (see @qtk/ir's moduleCodecs). QatModule's parts are
// its children (the float or fused module and the two fake-quants), which serialize on their own:
// the codec builds it with placeholders, and deserialization puts each serialized child in its
// field. The composite forms hold their step fake-quants in a `steps` object as well, so their
// codecs carry each step's config and build them in the constructor.
import { FakeQuantize } from '@qtk/fake-quant';
import { moduleCodecs, type JsonValue } from '@qtk/ir';
import { Identity, LayerNorm, Softmax } from '@qtk/nn';
import { LayerNormQat, SoftmaxQat } from './qat-composites.js';
import { QatModule } from './qat-module.js';

type Steps = Record<string, FakeQuantize>;

function stepConfigs(steps: Steps): Record<string, JsonValue> {
  const codec = moduleCodecs.get('FakeQuantize');
  return Object.fromEntries(Object.entries(steps).map(([k, fq]) => [k, codec.config(fq)]));
}

/** A step factory handing out the saved fake-quants in their saved order (the constructor's order). */
function stepFactory(configs: Record<string, JsonValue>): () => FakeQuantize {
  const codec = moduleCodecs.get('FakeQuantize');
  const list = Object.values(configs).map((c) => codec.create(c) as FakeQuantize);
  let i = 0;
  return () => list[i++] ?? new FakeQuantize();
}

let registered = false;

/** Registers QatModule's codec with @qtk/ir's moduleCodecs (idempotent). */
export function registerQatCodecs(): void {
  if (registered) return;
  registered = true;
  moduleCodecs.register<QatModule>({
    cls: QatModule,
    config: (m) => ({ training: m.training }),
    create: (c: { training?: boolean } | null) => {
      const q = new QatModule(new Identity(), null, null);
      q.training = c?.training ?? true;
      return q;
    },
  });
  moduleCodecs.register<SoftmaxQat>({
    cls: SoftmaxQat,
    config: (m) => ({ dim: m.dim, steps: stepConfigs(m.steps) }),
    create: (c: { dim: number; steps: Record<string, JsonValue> }) => new SoftmaxQat(new Softmax({ dim: c.dim }), stepFactory(c.steps)),
  });
  moduleCodecs.register<LayerNormQat>({
    cls: LayerNormQat,
    config: (m) => ({ float: moduleCodecs.get('LayerNorm').config(m.float), steps: stepConfigs(m.steps) }),
    create: (c: { float: JsonValue; steps: Record<string, JsonValue> }) => new LayerNormQat(moduleCodecs.get('LayerNorm').create(c.float) as LayerNorm, stepFactory(c.steps)),
  });
}

registerQatCodecs();
