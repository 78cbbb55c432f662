// A heterogeneous model whose CPU ops are scattered pays a dequantize, a quantize and a device switch at
// every CPU↔BPU transition. Past a threshold the partition is called fragmented and the warning says
// what would mend it: the op types that went to the CPU (replace them) or another march that runs them.
import type { DeployDeviceReport } from './check-deploy-device.js';

/**
 * [choice] More than 8 CPU↔BPU transitions is fragmented: a backbone with one unsupported head op has 2,
 * a model with a few CPU ops at its ends about 4; MobileNetV3 on a march without Hardswish / Hardsigmoid (in every
 * block on the CPU) has 66. docs/hybrid-guide.md, "A fragmented partition".
 */
export const FRAGMENTED_TRANSITIONS = 8;

/** The warning for a fragmented partition, or null. `otherMarches`: registered marches to suggest. */
export function fragmentationWarning(report: DeployDeviceReport, otherMarches: readonly string[] = []): string | null {
  if (report.transitions <= FRAGMENTED_TRANSITIONS) return null;
  const byType = new Map<string, number>();
  for (const n of report.nodes) if (n.device === 'CPU') byType.set(n.type, (byType.get(n.type) ?? 0) + 1);
  const types = [...byType]
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .map(([t, k]) => `${t} ×${k}`)
    .join(', ');
  const another = otherMarches.length ? `, or choose a march that runs them (${otherMarches.join(', ')})` : '';
  return (
    `the partition is fragmented: ${report.counts.CPU} CPU op(s), ${report.transitions} CPU↔BPU transitions in ` +
    `${report.segments.length} segments (more than ${FRAGMENTED_TRANSITIONS} transitions; each is a dequantize, a ` +
    `quantize and a device switch). The CPU ops: ${types}. Replace these ops in the model with ones the march ` +
    `runs${another}`
  );
}
