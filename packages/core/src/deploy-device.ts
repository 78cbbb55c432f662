// Where each node of a prepared model runs once deployed: on the march's accelerator (BPU) or on
// the host CPU in float. Prepare records it in node meta (JSON strings, so it survives model files
// and is copied onto the converted nodes); hybrid partitioning and step-wise quantization both write
// it, and `checkDeployDevice` (@qtk/hybrid) reads it.
import type { Node } from '@qtk/ir';

/** `node.meta` key: 'BPU' or 'CPU'. */
export const DEPLOY_DEVICE = 'deployDevice';
/** `node.meta` key: why a node runs on the CPU (a DeployReason). */
export const DEPLOY_REASON = 'deployReason';
/** `node.meta` key: the detail behind the reason (the table's words, the hybridDict entry). */
export const DEPLOY_DETAIL = 'deployDetail';

export type DeployDevice = 'BPU' | 'CPU';

/** Why a node runs on the CPU; 'supported' for BPU nodes. */
export type DeployReason =
  | 'supported'
  | 'op not in table'
  | 'dtype'
  | 'attribute constraint'
  | 'no conversion rule'
  | 'conversion refused'
  | 'hybridDict'
  | 'qconfig null';

export function deployDeviceOf(node: Node): DeployDevice | null {
  const d = node.meta[DEPLOY_DEVICE];
  return d === 'BPU' || d === 'CPU' ? d : null;
}

export function setDeployDevice(node: Node, device: DeployDevice, reason: DeployReason, detail?: string): void {
  node.meta[DEPLOY_DEVICE] = device;
  node.meta[DEPLOY_REASON] = reason;
  if (detail !== undefined) node.meta[DEPLOY_DETAIL] = detail;
  else delete node.meta[DEPLOY_DETAIL];
}

/** The CPU-fallback lists of hybrid mode: module types (class names or classes) and module names. */
export interface HybridDict {
  // biome-ignore lint/complexity/noBannedTypes: a module class, whatever its constructor takes
  readonly moduleType?: readonly (string | Function)[];
  readonly moduleName?: readonly string[];
}
