import type { MarchBackendV1 } from '@qtk/spec';
import { bernoulli2 } from './march.js';
import { TIE_CAT_INPUTS_PASS, unifyCatScale } from './unify-cat-scale.js';

/**
 * bernoulli2 with the cat-scale unification always on: prepared with it, a cat's inputs are tied to the
 * cat's scale (as `optimizeGraph: true` does on bernoulli2), so QAT trains with them; as the march of
 * convertFx, its `prepareConvert` hook unifies a model prepared without it. Not registered (the id
 * 'bernoulli2' is taken by the default backend); pass it directly:
 * `prepareQatFx(model, dict, { march: bernoulli2UnifyCat })`, `convertFx(qat, { march: bernoulli2UnifyCat })`.
 */
export const bernoulli2UnifyCat: MarchBackendV1 = Object.freeze({
  ...bernoulli2,
  description: `${bernoulli2.description ?? 'bernoulli2'}; cat producers adopt the cat's scale (unifyCatScale)`,
  hooks: Object.freeze({
    ...bernoulli2.hooks,
    preparePasses: [...(bernoulli2.hooks.preparePasses ?? []), TIE_CAT_INPUTS_PASS],
    prepareConvert: (...[gm, qatModel]: Parameters<NonNullable<MarchBackendV1['hooks']['prepareConvert']>>) => {
      unifyCatScale(gm, qatModel);
    },
  }),
});
