export { hybridPartitioner, deployedOps } from './partition-pass.js';
export { HybridDictMatcher } from './hybrid-dict.js';
export { nodeVerdict, opVerdict } from './node-support.js';
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
