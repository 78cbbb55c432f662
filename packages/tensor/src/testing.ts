// @qtk/tensor/testing: helpers for the tests of ops, kernels and gradients (ours and a plugin's). The main entry
// does not import this file, so a published bundle carries none of it.
export { gradcheck, type GradcheckMismatch, type GradcheckOptions } from './testing/gradcheck.js';
