import { bindAutogradHelpers } from './autograd.js';
import { onesLike } from './creation.js';
import { add } from './ops/binary.js';
import { registerBackend } from './registry.js';

/** The TypeScript reference backend: every op has a kernel here. */
export const cpuBackend = { name: 'cpu', priority: 0 };
registerBackend(cpuBackend);
bindAutogradHelpers(add, onesLike);
