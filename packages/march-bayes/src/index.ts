export { BAYES_CAPABILITIES } from './capabilities.js';
export { bayes, BAYES_NUMERICS, registerBayes } from './march.js';
