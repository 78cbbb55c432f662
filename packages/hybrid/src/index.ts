export { hybridPartitioner, deployedOps } from './partition-pass.js';
export { HybridDictMatcher, type HybridDictMatch } from './hybrid-dict.js';
export { nodeVerdict, opVerdict, type NodeVerdict } from './node-support.js';
export { HybridDictError } from './errors.js';
export {
  checkDeployDevice,
  type CheckDeployDeviceOptions,
  type DeployDeviceReport,
  type DeployedNode,
  type DeploySegment,
  type DeployMismatch,
} from './check-deploy-device.js';
export { formatDeployDevice } from './format-deploy-device.js';
export { fragmentationWarning, FRAGMENTED_TRANSITIONS } from './fragmentation.js';
