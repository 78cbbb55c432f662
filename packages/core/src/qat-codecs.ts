// Serialization codec of QatModule (see @qtk/ir's moduleCodecs). Its parts are its children (the
// float or fused module and the two fake-quants), which serialize on their own: the codec builds
// it with placeholders, and deserialization puts each serialized child in its field.
import { moduleCodecs } from '@qtk/ir';
import { Identity } from '@qtk/nn';
import { QatModule } from './qat-module.js';

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
}

registerQatCodecs();
