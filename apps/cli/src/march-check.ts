import { ConversionError, type PostTrainingOptions, type PostTrainingStage, quantizePostTraining } from '@qtk/core';
import { defaultQatQconfig } from '@qtk/fake-quant';
import type { GraphModule } from '@qtk/ir';
import { marches, type MarchBackendV1 } from '@qtk/spec';
import type { Tensor } from '@qtk/tensor';
import { nodeOp, type NodeOp } from './op-names.js';
import { checkDeployDevice, type DeployDeviceReport, hybridPartitioner, nodeVerdict } from '@qtk/hybrid';

/** How one node of the float graph fares on a march. */
export interface NodeSupport {
  readonly node: string;
  readonly op: NodeOp;
  /**
   * The march's verdict before conversion (no dtype): its converter's rule and table checks (supportsNode,
   * the hybrid partition's predicate), the capability table alone for a march without that hook.
   */
  readonly table: { readonly ok: boolean; readonly reason?: string };
  /**
   * What a trial conversion did: 'converted'; 'fused' (absorbed into a neighbour by fusion);
   * 'failed' (reason given); 'not-run' (prepare or calibration failed, so only the table speaks).
   */
  readonly convert: 'converted' | 'fused' | 'failed' | 'not-run';
  readonly reason?: string;
  /** The verdict: the trial conversion's, or the table's when it could not run. */
  readonly supported: boolean;
}

export interface MarchReport {
  readonly march: string;
  readonly nodes: readonly NodeSupport[];
  /** Set when prepare or calibration failed (then only the table speaks). */
  readonly prepareError?: string;
  readonly warnings: readonly string[];
}

/**
 * Checks every node of a float graph against a march twice: by the capability table (op name and
 * attributes) and by a trial conversion (prepare with the default QAT qconfig and a 1/128 input
 * stub, calibrate on one random batch in [-1, 1] (`examples`: one tensor per input), convertFx, which checks every node, also those
 * after a failed one). The conversion decides; the table only when prepare or calibration failed.
 */
export function checkMarch(gm: GraphModule, marchId: string, examples: readonly Tensor[]): MarchReport {
  const march: MarchBackendV1 = marches.get(marchId);
  const warnings: string[] = [];
  const failed = new Map<string, string>();
  // where the trial stopped: the stage that failed, and the prepared model once there is one
  const trial: { failedAt: PostTrainingStage | null; prepared: GraphModule | null } = {
    failedAt: null,
    prepared: null,
  };
  let prepareError: string | undefined;
  try {
    const explainError: PostTrainingOptions['explainError'] = (e, at) => {
      trial.failedAt = at.stage;
      trial.prepared = at.calibrated;
      return e;
    };
    trial.prepared = quantizePostTraining(gm, trialOptions(march, examples, warnings, { explainError })).calibrated;
  } catch (e) {
    if (trial.failedAt !== 'convert') {
      prepareError = (e as Error).message;
      trial.prepared = null;
    } else if (!ConversionError.isInstance(e)) throw e;
    else for (const f of e.failures) failed.set(f.node, f.reason || f.op);
  }
  const prepared = trial.prepared;
  const preparedNames = new Set(prepared ? [...prepared.graph.nodes].map((n) => n.name) : []);
  const nodes: NodeSupport[] = [];
  for (const node of gm.graph.nodes) {
    const op = nodeOp(gm, node);
    if (!op) continue;
    const v = nodeVerdict(gm, node, march, null);
    const table = !v || v.ok ? { ok: true } : { ok: false, reason: v.detail ?? v.reason };
    let convert: NodeSupport['convert'];
    let reason: string | undefined;
    if (!prepared) convert = 'not-run';
    else if (failed.has(node.name)) {
      convert = 'failed';
      reason = failed.get(node.name);
    } else convert = preparedNames.has(node.name) ? 'converted' : 'fused';
    const supported = convert === 'converted' || convert === 'fused' ? true : convert === 'failed' ? false : table.ok;
    nodes.push({ node: node.name, op, table, convert, ...(reason !== undefined ? { reason } : {}), supported });
  }
  return { march: march.id, nodes, ...(prepareError !== undefined ? { prepareError } : {}), warnings };
}

/**
 * The heterogeneous trial: prepare with `hybrid: true` (default QAT qconfig, 1/128 input stub),
 * calibrate on one random batch in [-1, 1], convert, and report where each node runs.
 */
export function checkHybrid(
  gm: GraphModule,
  marchId: string,
  examples: readonly Tensor[],
): { report: DeployDeviceReport; warnings: string[]; model: GraphModule } {
  const march: MarchBackendV1 = marches.get(marchId);
  const warnings: string[] = [];
  const { fixed: model } = quantizePostTraining(
    gm,
    trialOptions(march, examples, warnings, { hybrid: true, partitioner: hybridPartitioner }),
  );
  return { report: checkDeployDevice(model), warnings, model };
}

/** The trial's recipe: the default QAT qconfig, a 1/128 input stub, one calibration batch of `examples`. */
function trialOptions(
  march: MarchBackendV1,
  examples: readonly Tensor[],
  warnings: string[],
  more: Partial<PostTrainingOptions>,
): PostTrainingOptions {
  return {
    march,
    qconfig: { global: defaultQatQconfig },
    calibration: [[...examples]],
    inputQuantStubs: { scale: 1 / 128 },
    onWarning: (m) => warnings.push(m),
    ...more,
  };
}
