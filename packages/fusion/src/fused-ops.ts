// The fused conv modules in the op catalog (@qtk/tensor): a fused module is its layer's op
// (Conv, ConvTranspose, Gemm) with the layer's attributes, and reports its parts (the add, the
// activation) so a march can convert it without knowing the fused classes.
import { opOfModule, registerModuleOp, type FusedOp } from '@qtk/tensor';
import { FusedConvBase } from './fused-modules.js';

function fusedParts(m: FusedConvBase): FusedOp {
  const base = opOfModule(m.conv);
  if (!base) throw new Error(`${m.constructor.name}: its layer ${m.conv.constructor.name} stands for no catalog op`);
  const activation =
    m.activation === 'relu'
      ? { op: 'Relu', attrs: {} }
      : m.activation === 'relu6'
        ? { op: 'Clip', attrs: { min: 0, max: 6 } }
        : null;
  return {
    base: base.op,
    baseAttrs: base.attrs,
    parts: [base.op, ...(m.withAdd ? ['Add'] : []), ...(activation ? [activation.op] : [])],
    add: m.withAdd ? { addendInput: 1, baseFirst: m.convFirst } : null,
    activation,
  };
}

let registered = false;

/** Registers the fused conv modules in the op catalog; runs when the package loads, idempotent. */
export function registerFusedOps(): void {
  if (registered) return;
  registered = true;
  registerModuleOp<FusedConvBase>({
    cls: FusedConvBase,
    op: (m) => opOfModule(m.conv)?.op ?? null,
    attrs: (m) => ({ ...(opOfModule(m.conv)?.attrs ?? {}) }),
    fused: fusedParts,
  });
}

registerFusedOps();
