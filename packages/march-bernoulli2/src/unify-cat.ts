import type { MarchBackendV1 } from '@qtk/spec';
import { bernoulli2 } from './march.js';
import { unifyCatScale } from './unify-cat-scale.js';

/**
 * bernoulli2 with the optional `unifyCatScale` pass as its `prepareConvert` hook: the producers of
 * a cat adopt the cat's output scale, so the cat is a pure copy. Not registered (the id
 * 'bernoulli2' is taken by the default backend); pass it directly:
 * `convertFx(qat, { march: bernoulli2UnifyCat })`.
 */
export const bernoulli2UnifyCat: MarchBackendV1 = Object.freeze({
  ...bernoulli2,
  description: `${bernoulli2.description ?? 'bernoulli2'}; cat producers adopt the cat's scale (unifyCatScale)`,
  hooks: Object.freeze({
    ...bernoulli2.hooks,
    prepareConvert: (...[gm, qatModel]: Parameters<NonNullable<MarchBackendV1['hooks']['prepareConvert']>>) => {
      unifyCatScale(gm, qatModel);
    },
  }),
});
