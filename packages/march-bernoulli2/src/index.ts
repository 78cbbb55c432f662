export { BERNOULLI2_CAPABILITIES } from './capabilities.js';
export { bernoulli2, BERNOULLI2_NUMERICS } from './march.js';
export { bernoulli2UnifyCat } from './unify-cat.js';
export { tieCatInputs, unifyCatScale } from './unify-cat-scale.js';
