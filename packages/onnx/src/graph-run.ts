// The node-by-node interpreter lives in @qtk/ir (shared with the profiler); re-exported for the exporters.
export { attrAt, mapValues, runNodes, subAt } from '@qtk/ir';
