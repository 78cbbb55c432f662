export { BAYES_CAPABILITIES } from './capabilities.js';
export { bayes, BAYES_NUMERICS, bayesAddShiftLimit, registerBayes } from './march.js';
