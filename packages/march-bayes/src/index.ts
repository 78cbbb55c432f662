export { BAYES_CAPABILITIES } from './capabilities.js';
export { bayes, BAYES_NUMERICS, bayesAddShiftLimit } from './march.js';
