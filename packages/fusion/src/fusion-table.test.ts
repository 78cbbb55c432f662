import { Identity } from '@qtk/nn';
import { Generator } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { fuseFx } from './fuse-fx.js';
import { FusedConvBase } from './fused-modules.js';
import { defaultFusionPatterns, FUSION_FAMILIES, FUSION_SHAPES, shapeName } from './fusion-patterns.js';
import { expectClose } from './testing/expect-close.js';
import { allCombos, ComboNet, comboInputs, type ComboSpec } from './testing/combo-net.js';

/**
 * Where the fused module lives: the add's module when there is an add (a FloatFunctional, or the
 * generated one of a functional add), else the root's module when it is one, else a generated name.
 */
function pathFor(c: ComboSpec): string {
  if (c.add === 'float_functional') return 'ff';
  if (c.add) return '_generated_add_0';
  if (c.relu === 'ReLU' || c.relu === 'ReLU6') return 'act';
  if (c.relu) return `_generated_${c.relu}_0`;
  return 'bn';
}

function ruleFor(c: ComboSpec): string {
  return `${c.family}${shapeName({ bn: c.norm !== null, add: c.add ? c.order : null, relu: c.relu !== null })}`;
}

describe('the generated fusion table', () => {
  it('has one entry per family × shape, longest patterns first within a family', () => {
    expect(defaultFusionPatterns).toHaveLength(FUSION_FAMILIES.length * FUSION_SHAPES.length);
    expect(new Set(defaultFusionPatterns.map((p) => p.name)).size).toBe(44);
    expect(defaultFusionPatterns.slice(0, 11).map((p) => p.name)).toEqual([
      'conv2d_bn_add_relu',
      'conv2d_bn_add_relu_conv_second',
      'conv2d_bn_add',
      'conv2d_bn_add_conv_second',
      'conv2d_add_relu',
      'conv2d_add_relu_conv_second',
      'conv2d_bn_relu',
      'conv2d_add',
      'conv2d_add_conv_second',
      'conv2d_bn',
      'conv2d_relu',
    ]);
  });

  const combos = allCombos(FUSION_FAMILIES);

  it(`every combination (${combos.length}) is fused by its pattern into one module equal to the unfused model in eval`, () => {
    expect(combos.length).toBe(4 * 104);
    const g = new Generator(7);
    const failures: string[] = [];
    for (const c of combos) {
      const model = new ComboNet(c, g).eval();
      const [x, other] = comboInputs(c.family, g);
      const expected = model.call(x, other);
      let applied: readonly { rule: string }[] = [];
      const gm = fuseFx(model, { onFused: (a) => (applied = a) });
      const label = JSON.stringify(c);
      if (applied.length !== 1 || applied[0]!.rule !== ruleFor(c)) {
        failures.push(
          `${label}: applied ${applied.map((a) => a.rule).join(', ') || 'nothing'}, expected ${ruleFor(c)}`,
        );
        continue;
      }
      const calls = gm.graph.findNodes({ op: 'call_module' });
      expect(calls, label).toHaveLength(1);
      expect(calls[0]!.target, label).toBe(pathFor(c));
      expect(calls[0]!.name, label).toBe(pathFor(c));
      const fused = gm.getSubmodule(calls[0]!.target) as FusedConvBase;
      expect(fused, label).toBeInstanceOf(FusedConvBase);
      expect([fused.withAdd, fused.convFirst, fused.activation], label).toEqual([
        c.add !== null,
        c.order === 'first',
        c.relu ? c.relu.toLowerCase() : null,
      ]);
      if (c.norm && pathFor(c) !== 'bn') expect(gm.getSubmodule('bn'), label).toBeInstanceOf(Identity);
      if (c.add === 'float_functional' && pathFor(c) !== 'ff')
        expect(gm.getSubmodule('ff'), label).toBeInstanceOf(Identity);
      if ((c.relu === 'ReLU' || c.relu === 'ReLU6') && pathFor(c) !== 'act')
        expect(gm.getSubmodule('act'), label).toBeInstanceOf(Identity);
      expect(gm.getSubmodule('layer'), label).toBeInstanceOf(Identity);
      expectClose(gm.call(x, other), expected);
    }
    expect(failures).toEqual([]);
  });
});
