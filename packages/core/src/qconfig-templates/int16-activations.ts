import { setActivationDtype } from './activation-dtype.js';
import type { NamedQconfigSetter } from '../qconfig-setter.js';

/**
 * int16 activations on every quantized node whose op the march runs at int16 (weights unchanged;
 * high-precision outputs stay high precision). A march without int16 activations is a
 * QConfigError: the template asks for something the march cannot give. Nodes whose op the march's
 * table limits to int8 keep int8, with one warning listing them.
 */
export function int16ActivationSetter(): NamedQconfigSetter {
  return {
    name: 'int16 activations',
    apply(ctx) {
      const names = ctx.nodes.map((n) => n.name);
      const kept = setActivationDtype(ctx, names, 'qint16', 'int16ActivationSetter');
      if (kept.length)
        ctx.warn(
          `int16ActivationSetter: march '${ctx.march.id}' runs these ops at other dtypes only, they keep theirs: ${kept.join(', ')}`,
        );
      return undefined;
    },
  };
}
