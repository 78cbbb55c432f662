import '@qtk/march-bayes';
import { FakeQuantize, getDefaultQconfig } from '@qtk/fake-quant';
import type { GraphModule } from '@qtk/ir';
import { describe, expect, it } from 'vitest';
import {
  buildVariant,
  calibratedFakeQuants,
  type PrecisionChange,
  quantizableNodes,
  type VariantSetup,
  variantConfig,
} from './precision-variants.js';
import { randomInputs, TinyResNet } from '@qtk/test-models';

const scales = (gm: GraphModule) =>
  Object.fromEntries(
    gm
      .namedModules()
      .filter(([, m]) => m instanceof FakeQuantize)
      .map(([n, m]) => [n, [(m as FakeQuantize).dtype, ...(m as FakeQuantize).scale.values()]]),
  );

describe('precision variants', () => {
  for (const observer of ['min_max', 'mse', 'percentile']) {
    it(`${observer}: a variant starting from the baseline's statistics equals one calibrated from scratch; only changed fake-quants observe`, () => {
      const model = new TinyResNet().eval();
      const setup: VariantSetup = {
        march: 'bayes',
        calib: [1, 2, 3].map((s) => randomInputs(s, 8)),
        qconfigDict: { global: getDefaultQconfig('fake_quant', 'fake_quant', observer, 'min_max') },
      };
      const base = buildVariant(model, setup, variantConfig(setup, null, [], {}));
      expect(base.observed).toBe(Object.keys(scales(base.prepared)).length);
      const nodes = quantizableNodes(base.prepared);
      const reuse = calibratedFakeQuants(base.prepared);
      const changes: [PrecisionChange, number][] = [
        [{ int16: ['_generated_add_0'] }, 1], // its output fake-quant, now int16
        [{ float: ['relu0'] }, 1], // the boundary fake-quant after the float step
        [{ alone: 'conv2' }, 1], // the boundary before conv2
      ];
      for (const [change, fresh] of changes) {
        const config = variantConfig(setup, base.prepared, nodes, change);
        const scratch = buildVariant(model, setup, config);
        const reused = buildVariant(model, setup, config, reuse);
        expect(reused.observed).toBe(fresh);
        expect(scales(reused.prepared)).toEqual(scales(scratch.prepared));
        const x = randomInputs(9, 4);
        expect(reused.measured.call(x).values()).toEqual(scratch.measured.call(x).values());
      }
      // the baseline's observers were not touched: calibrating again from its statistics changes nothing
      expect(scales(buildVariant(model, setup, variantConfig(setup, null, [], {}), reuse).prepared)).toEqual(
        scales(base.prepared),
      );
    });
  }
});
